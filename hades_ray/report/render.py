"""report.html (one self-contained page), report.md and report.json from the same sections.

Every string that reaches the page goes through ``html.escape``: corpus text, document ids and titles,
detector names and file paths are data, never markup. Figures are ``data:`` URIs, so the page needs
no other file; report.md links the same PNGs under ``figures/``.
"""

from __future__ import annotations

import json
import math
from html import escape
from pathlib import Path

from hades_ray.pipeline import storage
from hades_ray.report.model import Section, Table, fmt
from hades_ray.report.plots import data_uri
from hades_ray.score.html import text_attributes

STYLE = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.8em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}figure{margin:1em 0}img{max-width:100%}
figcaption{font-size:.85em;color:#555}.note{color:#444;font-size:.92em}
mark{background:#fde2e0}.example{font-size:.88em;border-left:3px solid #ccc;padding-left:.6em;margin:.6em 0}
"""


def table_html(table: Table) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in table.columns)
    body = "".join("<tr>" + "".join(f"<td>{escape(fmt(v))}</td>" for v in row) + "</tr>" for row in table.rows)
    return f"<table><caption>{escape(table.title)}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def marked_html(text: str, spans: list[dict]) -> str:
    """The perturbed text, escaped, with each replacement in ``<mark>`` and its original in the title."""
    pieces, cursor = [], 0
    for span in sorted(spans, key=lambda s: s["start"]):
        if span["start"] < cursor:
            continue  # overlapping spans never come from the writer; skip rather than garble the text
        pieces.append(escape(text[cursor : span["start"]]))
        was, now = escape(span["original"], quote=True), escape(text[span["start"] : span["end"]])
        pieces.append(f'<mark title="was: {was}">{now}</mark>')
        cursor = span["end"]
    return "".join(pieces) + escape(text[cursor:])


def section_html(section: Section) -> str:
    parts = [f'<section id="{escape(section.key, quote=True)}"><h2>{escape(section.title)}</h2>']
    parts += [f'<p class="note">{escape(note)}</p>' for note in section.notes]
    parts += [table_html(t) for t in section.tables]
    for figure in section.figures:
        parts.append(
            f'<figure><img id="fig-{escape(figure.name, quote=True)}" alt="{escape(figure.title, quote=True)}" '
            f'src="{data_uri(figure.png)}"><figcaption>{escape(figure.title)}</figcaption></figure>'
        )
    if section.examples:
        parts.append("<h3>Examples: the replacements marked (hover for the original)</h3>")
    for example in section.examples:
        parts.append(
            f'<div class="example"{text_attributes(example)}><b>{escape(str(example["doc_id"]))}</b> '
            f"({escape(str(example['title'] or ''))})<br>{marked_html(example['text'], example['spans'])}</div>"
        )
    return "\n".join(parts) + "</section>"


def page_html(title: str, sections: list[Section], inputs: dict) -> str:
    listed = "".join(f"<li>{escape(k)}: {escape(str(v))}</li>" for k, v in inputs.items() if v)
    toc = "".join(f'<li><a href="#{escape(s.key, quote=True)}">{escape(s.title)}</a></li>' for s in sections)
    body = "\n".join(section_html(s) for s in sections)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1><ul>{listed}</ul><ol>{toc}</ol>{body}</body></html>\n"
    )


def _md(text: str) -> str:
    """Text for report.md: markdown viewers render inline HTML, so ``<``, ``>`` and ``&`` are escaped;
    quotes are not (they are markup only inside a tag, and ``&#x27;`` would show in a terminal)."""
    return escape(text, quote=False)


def _md_cell(value) -> str:
    return _md(fmt(value)).replace("|", "\\|").replace("\n", " ")


def table_md(table: Table) -> str:
    lines = [f"**{_md_cell(table.title)}**", "", "| " + " | ".join(_md_cell(c) for c in table.columns) + " |"]
    lines.append("|" + "---|" * len(table.columns))
    lines += ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in table.rows]
    return "\n".join(lines)


def page_md(title: str, sections: list[Section]) -> str:
    out = [f"# {_md(title)}", ""]
    for section in sections:
        out += [f"## {_md(section.title)}", ""]
        out += [_md(note) + "\n" for note in section.notes]
        out += [table_md(t) + "\n" for t in section.tables]
        out += [f"![{_md(f.title)}](figures/{f.name}.png)\n" for f in section.figures]
    return "\n".join(out)


def _clean(value):
    """NaN and infinities as null, so report.json is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def write_pages(output: Path, title: str, sections: list[Section], inputs: dict) -> dict[str, Path]:
    """Write report.html, report.md, report.json and figures/*.png under ``output``."""
    storage.makedirs(output / "figures")
    for section in sections:
        for figure in section.figures:
            storage.write(output / "figures" / f"{figure.name}.png", figure.png)
    paths = {"html": output / "report.html", "md": output / "report.md", "json": output / "report.json"}
    storage.write(paths["html"], page_html(title, sections, inputs))
    storage.write(paths["md"], page_md(title, sections))
    data = {"title": title, "inputs": inputs, "sections": {s.key: s.to_json() for s in sections}}
    storage.write(paths["json"], json.dumps(_clean(data), indent=2, allow_nan=False) + "\n")
    return paths
