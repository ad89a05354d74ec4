"""Importing judgments: validated, append-only, one new numbered file per import.

Accepted inputs: a CSV with columns ``item_id, judge_id, label`` (label H/N, also 1/0), or a Label
Studio export (JSON list of tasks with ``data.item_id`` and ``annotations[].result[].value.choices``).
Bad rows (unknown item, unknown label, a judge judging an item twice, a missing field) stop the
import with their line numbers, or with ``skip_bad`` go to a quarantine file with reasons.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

import pandas as pd

from hades_ray.select.workdir import round_dir

COLUMNS = ["item_id", "judge_id", "label", "where", "simulated"]
LABEL_ALIASES = {
    "h": "H",
    "1": "H",
    "hallucination": "H",
    "yes": "H",
    "n": "N",
    "0": "N",
    "not": "N",
    "no": "N",
    "not hallucination": "N",
    "not_hallucination": "N",
}


class JudgmentError(ValueError):
    """An import that cannot be used as is; the message lists the bad rows with their line numbers."""


def batch_items(workdir: str | Path, round_index: int) -> list[dict]:
    path = round_dir(workdir, round_index) / "batch.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"round {round_index} has no batch yet ({path}); run `hades-ray round` first")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_judgments(workdir: str | Path, round_index: int) -> pd.DataFrame:
    """Every accepted judgment of a round, over all its imports, in import order."""
    files = sorted((round_dir(workdir, round_index) / "judgments").glob("import-[0-9][0-9][0-9].*csv"))
    files = [f for f in files if not f.name.endswith(".source.csv")]
    frames = [pd.read_csv(f, dtype=str, keep_default_na=False).assign(file=f.name) for f in files]
    if not frames:
        return pd.DataFrame(columns=COLUMNS + ["file"])
    return pd.concat(frames, ignore_index=True)


def normalize_label(raw) -> str | None:
    return LABEL_ALIASES.get(str(raw).strip().lower()) if raw is not None else None


def parse_csv(path: Path) -> list[dict]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = {"item_id", "judge_id", "label"} - set(reader.fieldnames or [])
        if missing:
            raise JudgmentError(
                f"{path}: line 1: missing column(s) {', '.join(sorted(missing))}; expected item_id, judge_id, label"
            )
        return [
            {
                "item_id": (r.get("item_id") or "").strip(),
                "judge_id": (r.get("judge_id") or "").strip(),
                "label": r.get("label"),
                "where": f"line {reader.line_num}",
            }
            for r in reader
        ]


def parse_label_studio(path: Path) -> list[dict]:
    try:
        tasks = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise JudgmentError(f"{path}: not valid JSON (line {error.lineno}: {error.msg})") from None
    if not isinstance(tasks, list):
        raise JudgmentError(f"{path}: expected a Label Studio export (a JSON list of tasks)")
    rows = []
    for t, task in enumerate(tasks):
        item = str((task.get("data") or {}).get("item_id", "")) if isinstance(task, dict) else ""
        for a, annotation in enumerate(task.get("annotations") or [] if isinstance(task, dict) else []):
            if annotation.get("was_cancelled"):
                continue
            judge = annotation.get("completed_by", "")
            judge = judge.get("email") or judge.get("id") if isinstance(judge, dict) else judge
            choices = [c for r in annotation.get("result") or [] for c in (r.get("value") or {}).get("choices", [])]
            rows.append(
                {
                    "item_id": item,
                    "judge_id": str(judge),
                    "label": choices[0] if len(choices) == 1 else "|".join(choices),
                    "where": f"task {t + 1} annotation {a + 1}",
                }
            )
    return rows


def validate(rows: list[dict], items: set[str], earlier: pd.DataFrame) -> tuple[list[dict], list[dict]]:
    """Split rows into accepted (label normalized) and bad (with a ``reason``)."""
    seen = set(zip(earlier["item_id"], earlier["judge_id"])) if len(earlier) else set()
    good, bad = [], []
    for row in rows:
        label = normalize_label(row["label"])
        reason = (
            "missing item_id"
            if not row["item_id"]
            else "missing judge_id"
            if not row["judge_id"]
            else f"unknown item {row['item_id']!r} (not in this round's batch)"
            if row["item_id"] not in items
            else f"unknown label {row['label']!r} (expected H or N)"
            if label is None
            else f"judge {row['judge_id']!r} already judged item {row['item_id']!r}"
            if (row["item_id"], row["judge_id"]) in seen
            else ""
        )
        if reason:
            bad.append({**row, "reason": reason})
            continue
        seen.add((row["item_id"], row["judge_id"]))
        good.append({**row, "label": label})
    return good, bad


def next_import_number(directory: Path) -> int:
    numbers = [int(p.name.split("-")[1].split(".")[0]) for p in directory.glob("import-[0-9][0-9][0-9]*")]
    return max(numbers, default=0) + 1


def _write_new(frame: pd.DataFrame, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    frame.to_csv(tmp, index=False)
    os.link(tmp, path)  # fails rather than overwrite: imports are append-only
    tmp.unlink()


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
    source = Path(source)
    if rows is None:
        if not source.is_file():
            raise FileNotFoundError(f"judgments file not found: {source}")
        rows = parse_label_studio(source) if source.suffix.lower() == ".json" else parse_csv(source)
    items = {str(item["id"]) for item in batch_items(workdir, round_index)}
    good, bad = validate(rows, items, load_judgments(workdir, round_index))
    if bad and not skip_bad:
        listed = "\n".join(f"  {b['where']}: {b['reason']}" for b in bad[:20])
        more = f"\n  ... and {len(bad) - 20} more" if len(bad) > 20 else ""
        raise JudgmentError(
            f"{source}: {len(bad)} bad row(s), nothing imported (use --skip-bad to quarantine them):\n{listed}{more}"
        )
    directory = round_dir(workdir, round_index) / "judgments"
    directory.mkdir(parents=True, exist_ok=True)
    number = next_import_number(directory)
    name = f"import-{number:03d}" + (".simulated" if simulated else "")
    frame = pd.DataFrame(good, columns=COLUMNS[:4]).assign(simulated=str(simulated).lower())
    _write_new(frame, directory / f"{name}.csv")
    if source.is_file():
        shutil.copyfile(source, directory / f"{name}.source{source.suffix or '.txt'}")
    report = {
        "import": name,
        "accepted": len(good),
        "quarantined": len(bad),
        "simulated": simulated,
        "file": str(directory / f"{name}.csv"),
        "source": str(source),
    }
    if bad:
        quarantine = round_dir(workdir, round_index) / "quarantine" / f"{name}.bad.csv"
        quarantine.parent.mkdir(parents=True, exist_ok=True)
        _write_new(pd.DataFrame(bad, columns=["where", "item_id", "judge_id", "label", "reason"]), quarantine)
        report["quarantine"] = str(quarantine)
    return report
