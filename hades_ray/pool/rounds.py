"""A round folder's files for judges, read: its batch (``batch.jsonl``) and its accepted judgments
(``judgments/import-NNN.csv``, written by annotate/judgments.py), from which the labels are made."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from hades_ray.pool.layout import round_dir

JUDGMENT_COLUMNS = ["item_id", "judge_id", "label", "where", "simulated"]


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
        return pd.DataFrame(columns=JUDGMENT_COLUMNS + ["file"])
    return pd.concat(frames, ignore_index=True)


def simulated_rounds(workdir: str | Path) -> list[int]:
    """The rounds with at least one import of SIMULATED judgments (``import-NNN.simulated.csv``)."""
    found = Path(workdir).glob("round-[0-9][0-9][0-9]/judgments/import-[0-9][0-9][0-9].simulated.csv")
    return sorted({int(path.parent.parent.name.split("-")[1]) for path in found})
