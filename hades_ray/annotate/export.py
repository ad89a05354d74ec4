"""Items for judges: a CSV for crowd-sourcing and Label Studio tasks with their labeling config.

Corpus text is escaped wherever it is rendered: HTML-escaped inside the ``<mark>`` markup of Label
Studio and of the CSV's ``*_html`` columns, CSV-quoted by the csv module, and every string cell of the
CSV guarded against spreadsheet formulas (``io/safe_csv.py``). Item ids are written unaltered: an id
that would need the guard is refused, since its judgments must come back under the same id. Exports
hold the round's lock and appear under their final name only when complete.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from hades_ray.annotate.judgments import JudgmentError, next_import_number
from hades_ray.io.hades_format import parse_instance
from hades_ray.io.safe_csv import unsafe_id_reason, write_guarded_csv
from hades_ray.pipeline import storage
from hades_ray.pipeline.lock import OutputLock
from hades_ray.pool.labels import round_table
from hades_ray.pool.layout import round_dir
from hades_ray.pool.rounds import batch_items

LABEL_CONFIG = """<View>
  <Header value="Original text"/>
  <HyperText name="original" value="$original_html"/>
  <Header value="Perturbed text (the highlighted span was replaced)"/>
  <HyperText name="perturbed" value="$perturbed_html"/>
  <Header value="$question"/>
  <Choices name="label" toName="perturbed" choice="single" required="true" showInline="true">
    <Choice value="H" hint="hallucination"/>
    <Choice value="N" hint="not a hallucination"/>
  </Choices>
</View>
"""


def highlight_html(text: str, start: int, end: int) -> str:
    """``text`` HTML-escaped, with characters ``start:end`` in a ``<mark>``."""
    return html.escape(text[:start]) + "<mark>" + html.escape(text[start:end]) + "</mark>" + html.escape(text[end:])


def highlight_plain(text: str, start: int, end: int) -> str:
    return text[:start] + "[[" + text[start:end] + "]]" + text[end:]


def perturbed_text(item: dict) -> tuple[str, int, int]:
    instance = parse_instance(item)
    words, start, end = instance.words, instance.start, instance.end
    before = " ".join(words[:start])
    offset = len(before) + (1 if before else 0)
    return " ".join(words), offset, offset + len(" ".join(words[start : end + 1]))


def export_rows(config, workdir: str | Path, round_index: int) -> list[dict]:
    """One row per item that still needs judgments, with how many more it needs."""
    items = batch_items(workdir, round_index)
    table = round_table(config, workdir, round_index, items)
    needed = dict(zip(table["item_id"], table["needed"]))
    rows = []
    for item in items:
        item_id = str(item["id"])
        if needed[item_id] <= 0:
            continue
        unsafe = unsafe_id_reason(item_id, "item id")
        if unsafe:
            raise JudgmentError(f"round {round_index}: {unsafe}; nothing exported")
        text, start, end = perturbed_text(item)
        orig, o_start, o_end = item["original_text"], item["original_start"], item["original_end"]
        rows.append(
            {
                "item_id": item_id,
                "judges_needed": int(needed[item_id]),
                "original_text": highlight_plain(orig, o_start, o_end),
                "perturbed_text": highlight_plain(text, start, end),
                "original_html": highlight_html(orig, o_start, o_end),
                "perturbed_html": highlight_html(text, start, end),
                "original_span": item.get("original_span", ""),
                "replacement": item.get("replacement", ""),
                "question": config.annotate.question,
            }
        )
    return rows


def _write_export(rows: list[dict], directory: Path, name: str, fmt: str) -> list[str]:
    if fmt == "csv":
        path = write_guarded_csv(rows, directory / f"{name}.csv", list(rows[0]) if rows else ["item_id"])
        return [str(path)]
    tasks, xml = directory / f"{name}.tasks.json", directory / f"{name}.labeling_config.xml"
    storage.write(tasks, json.dumps([{"data": row} for row in rows], ensure_ascii=False, indent=1), replace=False)
    storage.write(xml, LABEL_CONFIG, replace=False)
    return [str(tasks), str(xml)]


def export_items(config, workdir: str | Path, round_index: int, fmt: str = "csv") -> dict:
    """Write the round's next export (``csv`` or ``label-studio``); earlier exports are kept."""
    if fmt not in ("csv", "label-studio"):
        raise JudgmentError(f"unknown export format {fmt!r}: csv or label-studio")
    with OutputLock(round_dir(workdir, round_index), wait=True):
        rows = export_rows(config, workdir, round_index)
        directory = round_dir(workdir, round_index) / "exports"
        name = f"export-{next_import_number(directory, 'export'):03d}"
        files = _write_export(rows, directory, name, fmt)
    return {
        "export": name,
        "items": len(rows),
        "judgments_requested": sum(r["judges_needed"] for r in rows),
        "files": files,
    }
