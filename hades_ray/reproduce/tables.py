"""Tables 2 (offline) and 3 (online) from the trials' test predictions: every cell the paper's figure,
ours and the difference, plus McNemar's exact test and a paired bootstrap interval between rows.

Metrics are ``hades_ray.metrics.binary_metrics`` of each cell's predictions; the pairwise statistics are
the report's (``report.detectors.paired``: McNemar's exact binomial test on the items one row gets right
and the other wrong, and the percentile bootstrap over test items of the G-Mean difference, seeded).
The paper's figures come from ``hades_ray/report/paper_figures.py``, the one place that holds them
(a metric missing there shows as "–", never as zero).
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np

from hades_ray.metrics import KEYS, binary_metrics
from hades_ray.report import paper_figures
from hades_ray.reproduce.grid import Cell, Grid
from hades_ray.reproduce.trial import PREDICTIONS, cell_folder

TITLES = {"offline": "Table 2 (offline)", "online": "Table 3 (online)"}


def paper_tables() -> dict[str, dict[str, dict[str, float]]]:
    """mode -> paper row -> metric -> the paper's value in percent."""
    return {mode: rows for mode, (_, rows) in paper_figures.TABLES.items()}


def load_cell(output: Path, cell: Cell) -> dict | None:
    path = cell_folder(output, cell) / PREDICTIONS
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _scored(name: str, record: dict):
    from hades_ray.report.detectors import Scored

    return Scored(name, record["ids"], np.array(record["labels"]), np.array(record["p"]), np.array(record["pred"]))


def _row_entry(grid: Grid, cell: Cell, record: dict | None, paper: dict[str, float]) -> dict:
    row = grid.row(cell.row)
    ours = binary_metrics(record["labels"], record["pred"], record["p"]) if record else None
    cells = {}
    for key in KEYS:
        value = None if ours is None or math.isnan(ours[key]) else 100 * ours[key]
        theirs = paper.get(key)
        diff = None if value is None or theirs is None else value - theirs
        cells[key] = {
            "paper": theirs,
            "ours": value,
            "diff": diff,
            "note": paper_figures.cell_note(TITLES[cell.mode], row.name, paper, key),
        }
    return {
        "row": row.name,
        "label": row.label,
        "stand_in": bool(row.stands_in_for),
        "backbone": record.get("backbone") if record else row.backbone,
        "revision": record.get("revision") if record else row.revision or None,
        "best_epoch": record.get("best_epoch") if record else None,
        "n": ours["n"] if ours else None,
        "status": "done" if record else "failed or not run",
        "cells": cells,
    }


def build_tables(output: Path, grid: Grid, cells: list[Cell], seed: int, resamples: int) -> dict:
    """Both tables and the pairwise tests, as the JSON ``tables.json`` holds."""
    paper = paper_tables()
    tables = {}
    for mode in ("offline", "online"):
        mode_cells = [c for c in cells if c.mode == mode]
        if not mode_cells:
            continue
        records = {c.row: load_cell(output, c) for c in mode_cells}
        rows = [_row_entry(grid, c, records[c.row], paper.get(mode, {}).get(c.row, {})) for c in mode_cells]
        tables[mode] = {"title": TITLES[mode], "rows": rows, "paired": _paired(records, seed, resamples)}
    return tables


def _paired(records: dict[str, dict | None], seed: int, resamples: int) -> list[dict]:
    from hades_ray.report.detectors import paired

    done = [(name, r) for name, r in records.items() if r]
    return [
        paired(_scored(a, ra), _scored(b, rb), seed, resamples) for (a, ra), (b, rb) in itertools.combinations(done, 2)
    ]
