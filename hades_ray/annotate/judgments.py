"""Importing judgments: validated, append-only, one new numbered file per import.

Judges' files (CSV or Label Studio) are read by ``annotate/parsers.py``; labels H/N, also 1/0. Bad
rows (unknown item, unknown label, a judge judging an item twice, a missing field, an unreadable line)
stop the import with their line numbers, or with ``skip_bad`` go to a quarantine file with reasons.
Ids are stored exactly as given, so an id that a spreadsheet would read as a formula is refused
rather than escaped. Imports hold the round's lock.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from hades_ray.annotate.parsers import JudgmentError, parse_csv, parse_label_studio
from hades_ray.io.safe_csv import unsafe_id_reason, write_guarded_csv
from hades_ray.pipeline import storage
from hades_ray.pipeline.lock import OutputLock
from hades_ray.pool.layout import round_dir
from hades_ray.pool.rounds import JUDGMENT_COLUMNS, batch_items, load_judgments

BAD_COLUMNS = ["where", "item_id", "judge_id", "label", "reason"]
H_LABELS = ("h", "1", "hallucination", "yes")
N_LABELS = ("n", "0", "not", "no", "not hallucination", "not_hallucination")
LABEL_ALIASES = dict.fromkeys(H_LABELS, "H") | dict.fromkeys(N_LABELS, "N")


def normalize_label(raw) -> str | None:
    return LABEL_ALIASES.get(raw.strip().lower()) if isinstance(raw, str) else None


def row_problem(row: dict, items: set[str], seen: set) -> str:
    """Why a row cannot be imported ("" when it can)."""
    if row.get("problem"):
        return row["problem"]
    if not row["item_id"]:
        return "missing item_id"
    if not row["judge_id"]:
        return "missing judge_id"
    unsafe = unsafe_id_reason(row["item_id"], "item id") or unsafe_id_reason(row["judge_id"], "judge id")
    if unsafe:
        return unsafe
    if row["item_id"] not in items:
        return f"unknown item {row['item_id']!r} (not in this round's batch)"
    if normalize_label(row["label"]) is None:
        return f"unknown label {row['label']!r} (expected H or N)"
    if (row["item_id"], row["judge_id"]) in seen:
        return f"judge {row['judge_id']!r} already judged item {row['item_id']!r}"
    return ""


def validate(rows: list[dict], items: set[str], earlier: pd.DataFrame) -> tuple[list[dict], list[dict]]:
    """Split rows into accepted (label normalized) and bad (with a ``reason``)."""
    seen = set(zip(earlier["item_id"], earlier["judge_id"]))
    good, bad = [], []
    for row in rows:
        reason = row_problem(row, items, seen)
        if reason:
            bad.append({**row, "label": "" if row["label"] is None else str(row["label"]), "reason": reason})
            continue
        seen.add((row["item_id"], row["judge_id"]))
        good.append({**row, "label": normalize_label(row["label"])})
    return good, bad


def next_import_number(directory: Path, prefix: str = "import") -> int:
    """The number after the highest of ``directory``'s ``PREFIX-NNN*`` files (imports or exports)."""
    numbers = [int(p.name.split("-")[1].split(".")[0]) for p in directory.glob(f"{prefix}-[0-9][0-9][0-9]*")]
    return max(numbers, default=0) + 1


def read_rows(source: Path) -> tuple[list[dict], int]:
    """(rows, cancelled Label Studio annotations) of a judges' file."""
    if not source.exists():
        raise FileNotFoundError(f"judgments file not found: {source}")
    if not source.is_file():
        raise JudgmentError(f"{source}: not a file")
    if source.suffix.lower() == ".json":
        return parse_label_studio(source)
    return parse_csv(source), 0


def import_judgments(
    config,
    workdir: str | Path,
    round_index: int,
    source: str | Path,
    skip_bad: bool = False,
    simulated: bool = False,
    rows: list[dict] | None = None,
) -> dict:
    """Validate and store one import as the round's next numbered file; returns its counts."""
    with OutputLock(round_dir(workdir, round_index), wait=True):
        return import_locked(workdir, round_index, source, skip_bad, simulated, rows)


def import_locked(workdir, round_index: int, source, skip_bad=False, simulated=False, rows=None) -> dict:
    """``import_judgments`` for a caller that already holds the round's lock."""
    source = Path(source)
    cancelled = 0
    if rows is None:
        rows, cancelled = read_rows(source)
    items = {str(item["id"]) for item in batch_items(workdir, round_index)}
    good, bad = validate(rows, items, load_judgments(workdir, round_index))
    if bad and not skip_bad:
        listed = "\n".join(f"  {b['where']}: {b['reason']}" for b in bad[:20])
        more = f"\n  ... and {len(bad) - 20} more" if len(bad) > 20 else ""
        raise JudgmentError(
            f"{source}: {len(bad)} bad row(s), nothing imported (use --skip-bad to quarantine them):\n{listed}{more}"
        )
    directory = round_dir(workdir, round_index) / "judgments"
    name = f"import-{next_import_number(directory):03d}" + (".simulated" if simulated else "")
    rows_out = [{**g, "simulated": str(simulated).lower()} for g in good]
    write_guarded_csv(rows_out, directory / f"{name}.csv", JUDGMENT_COLUMNS)
    if source.is_file():
        storage.write(directory / f"{name}.source{source.suffix or '.txt'}", source.read_bytes(), replace=False)
    report = {
        "import": name,
        "accepted": len(good),
        "quarantined": len(bad),
        "cancelled": cancelled,
        "simulated": simulated,
        "file": str(directory / f"{name}.csv"),
        "source": str(source),
    }
    if bad:
        quarantine = round_dir(workdir, round_index) / "quarantine" / f"{name}.bad.csv"
        write_guarded_csv(bad, quarantine, BAD_COLUMNS)
        report["quarantine"] = str(quarantine)
    return report
