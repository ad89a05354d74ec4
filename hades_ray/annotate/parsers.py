"""Reading judges' files into rows: a CSV (``item_id, judge_id, label``) or a Label Studio JSON export.

Each row is ``{"item_id", "judge_id", "label", "where", "problem"}``; a row that cannot be read says
why in ``problem`` (the import then stops naming it, or quarantines it with ``--skip-bad``). Only a
file that cannot be read at all (no header, not JSON, not UTF-8 JSON) raises ``JudgmentError``.
The CSV is read line by line (1 MiB per line at most; csv's own limit of 128 KiB per field).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

from hades_ray.errors import UserError
from hades_ray.io.lines import LineError, decode_line, iter_raw_lines

REQUIRED = ("item_id", "judge_id", "label")
MAX_JSON_BYTES = 256 << 20  # Label Studio exports of a round are a few MiB


class JudgmentError(UserError):
    """An import that cannot be used as is; the message lists the bad rows with their line numbers."""


def _row(where: str, item="", judge="", label=None, problem: str = "") -> dict:
    return {"item_id": item, "judge_id": judge, "label": label, "where": where, "problem": problem}


def _text_lines(path: Path, problems: dict[int, str]) -> Iterator[str]:
    # An unreadable line becomes an empty one (csv skips it) and is reported with its number.
    with path.open("rb") as handle:
        for number, raw in iter_raw_lines(handle):
            try:
                yield decode_line(raw, number)
            except LineError as error:
                problems[number] = str(error)
                yield "\n"


def parse_csv(path: Path) -> list[dict]:
    """Rows of a judgments CSV; its header must name item_id, judge_id and label."""
    problems: dict[int, str] = {}
    reader = csv.reader(_text_lines(path, problems))
    header = _next_row(reader)
    columns = [str(c).strip() for c in (header if isinstance(header, list) else [])]
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        raise JudgmentError(
            f"{path}: line 1: missing column(s) {', '.join(missing)}; expected item_id, judge_id, label"
            + (f" ({problems[1]})" if 1 in problems else "")
        )
    index = {c: columns.index(c) for c in REQUIRED}
    rows = []
    while (record := _next_row(reader)) is not None:
        where = f"line {reader.line_num}"
        if isinstance(record, str):
            rows.append(_row(where, problem=record))
        elif record:
            values = {c: record[i].strip() if i < len(record) else "" for c, i in index.items()}
            rows.append(_row(where, values["item_id"], values["judge_id"], values["label"]))
    rows += [_row(f"line {n}", problem=p) for n, p in problems.items() if n > 1]
    return sorted(rows, key=lambda r: int(r["where"].split()[1]))


def _next_row(reader) -> list | str | None:
    """The next record, a ``str`` problem for a record csv cannot read, or None at the end."""
    try:
        return next(reader)
    except StopIteration:
        return None
    except csv.Error as error:
        return f"not a readable CSV record ({error})"


def parse_label_studio(path: Path) -> tuple[list[dict], int]:
    """(rows, cancelled annotations) of a Label Studio export: a JSON list of tasks."""
    tasks = _read_json(path)
    if not isinstance(tasks, list):
        raise JudgmentError(f"{path}: expected a Label Studio export (a JSON list of tasks)")
    rows, cancelled = [], 0
    for t, task in enumerate(tasks, start=1):
        data = task.get("data") if isinstance(task, dict) else None
        annotations = task.get("annotations", []) if isinstance(task, dict) else None
        problem = (
            "task is not a JSON object"
            if not isinstance(task, dict)
            else "field 'data' is not an object"
            if not isinstance(data, dict)
            else "field 'annotations' is not a list"
            if not isinstance(annotations, list)
            else ""
        )
        if problem:
            rows.append(_row(f"task {t}", problem=problem))
            continue
        item = data.get("item_id", "")
        item = str(item) if isinstance(item, (str, int)) and not isinstance(item, bool) else ""
        for a, annotation in enumerate(annotations, start=1):
            if isinstance(annotation, dict) and annotation.get("was_cancelled") is True:
                cancelled += 1
                continue
            rows.append(_annotation_row(annotation, item, f"task {t} annotation {a}"))
    return rows, cancelled


def _read_json(path: Path):
    if path.stat().st_size > MAX_JSON_BYTES:
        raise JudgmentError(f"{path}: {path.stat().st_size} bytes is larger than a Label Studio export can be here")
    try:
        return json.loads(path.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError as error:
        raise JudgmentError(f"{path}: not valid UTF-8 (byte {error.start + 1})") from None
    except json.JSONDecodeError as error:
        raise JudgmentError(f"{path}: not valid JSON (line {error.lineno}: {error.msg})") from None
    except RecursionError:
        raise JudgmentError(f"{path}: JSON nested too deeply") from None
    except ValueError as error:
        raise JudgmentError(f"{path}: not usable JSON ({error})") from None


def _annotation_row(annotation, item: str, where: str) -> dict:
    if not isinstance(annotation, dict):
        return _row(where, item, problem="annotation is not a JSON object")
    judge = judge_id(annotation.get("completed_by"))
    if not judge:
        return _row(where, item, problem="annotation has no judge (completed_by has neither a user id nor an email)")
    results = annotation.get("result", [])
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        return _row(where, item, judge, problem="field 'result' is not a list of objects")
    choices = []
    for result in results:
        value = result.get("value", {})
        found = value.get("choices", []) if isinstance(value, dict) else None
        if not isinstance(found, list):
            return _row(where, item, judge, problem="field 'result.value.choices' is not a list")
        choices += found
    if len(choices) != 1:
        return _row(where, item, judge, problem=f"{len(choices)} choices {choices[:4]!r} (expected exactly one)")
    if not isinstance(choices[0], str):
        return _row(where, item, judge, problem=f"choice {choices[0]!r} is not a string (expected H or N)")
    return _row(where, item, judge, choices[0])


def judge_id(completed_by) -> str:
    """The judge of an annotation: its user's email, else its user id ("" when it has neither)."""
    if isinstance(completed_by, dict):
        completed_by = completed_by.get("email") or completed_by.get("id")
    if isinstance(completed_by, bool) or not isinstance(completed_by, (str, int)):
        return ""
    return str(completed_by).strip()
