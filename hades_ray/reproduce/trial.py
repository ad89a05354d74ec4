"""One trial of the grid: train one detector (a Ray Train fit for the transformers, scikit-learn for
LR/SVM: ``train.fit.train_detector`` either way), score the test split with its best epoch, and write
the predictions the tables are computed from.

A trial's files live under ``OUT/cells/<row>-<mode>/`` (named by the cell, not by Tune's trial id), so
the tables can be rebuilt from them, and a trial restarted by ``--resume`` starts its cell afresh.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hades_ray.detect.data import LoadReport, numbered_instances
from hades_ray.metrics import binary_metrics
from hades_ray.pipeline.storage import write_json_atomic
from hades_ray.reproduce.grid import Cell, Grid, cell_config

PREDICTIONS = "predictions.json"
# Test hook, as hades_ray/train/loop.py's FAULT_ENV: "CELL_KEY:MARKER" makes that cell's trial raise once
# (while MARKER does not exist), so a test can interrupt a grid and resume it.
FAULT_ENV = "HADES_RAY_REPRODUCE_FAULT"


def split_path(dataset: str | Path, split: str) -> Path:
    """A HaDes-format dataset folder's split: the published ``train.txt`` layout (``dataset build`` too)."""
    return Path(dataset) / f"{split}.txt"


def test_items(dataset: str | Path, split: str, skip_bad: bool) -> tuple[list[str], list]:
    """The labelled instances of the scored split, with ids every trial shares (the file's line numbers)."""
    pairs = list(numbered_instances(split_path(dataset, split), skip_bad, LoadReport(), labelled_only=True))
    return [f"line-{row + 1}" for row, _ in pairs], [i for _, i in pairs]


def cell_folder(output: str | Path, cell: Cell) -> Path:
    return Path(output) / "cells" / cell.key


def fault_setting() -> str:
    """The driver's ``FAULT_ENV`` (trial processes are Ray workers: they do not see the driver's environment)."""
    return os.environ.get(FAULT_ENV, "")


def _maybe_fail(cell: Cell, fault: str) -> None:
    key, _, marker = fault.partition(":")
    if key == cell.key and marker and not os.path.exists(marker):
        Path(marker).write_text("raised once\n")
        raise RuntimeError(f"injected fault in trial {cell.key} ({FAULT_ENV})")


def table_trial(trial: dict, base: dict, grid: Grid, dataset: str, output: str, fault: str = "") -> None:
    """Tune's function trainable: ``trial["cell"]`` is one (row, mode) of the grid."""
    from ray import tune

    from hades_ray.detect.detector import Detector
    from hades_ray.train.fit import train_detector

    cell = Cell(**trial["cell"])
    config = cell_config(base, grid, cell)
    folder = cell_folder(output, cell)
    (folder / PREDICTIONS).unlink(missing_ok=True)  # a restarted trial never leaves an older cell's file
    _maybe_fail(cell, fault)
    detector = grid.row(cell.row).detector
    model = train_detector(
        config,
        split_path(dataset, "train"),
        split_path(dataset, "valid"),
        folder / "detector",
        detector,
        cell.mode,
        config.detect.workers,
    )
    ids, items = test_items(dataset, config.reproduce.test_split, config.detect.skip_bad)
    p, pred = Detector.open(model).score_instances(items, config.detect)
    labels = [i.label for i in items]
    record = {
        "cell": {"row": cell.row, "mode": cell.mode},
        "detector": detector,
        "backbone": config.detect.backbone if detector == "transformer" else config.models.mlm,
        "revision": config.models.revisions.get(config.detect.backbone) if detector == "transformer" else None,
        "best_epoch": json.loads((model / "metrics.json").read_text(encoding="utf-8")).get("epoch"),
        "ids": ids,
        "labels": labels,
        "p": [float(v) for v in p],
        "pred": [int(v) for v in pred],
    }
    write_json_atomic(folder / PREDICTIONS, record)
    metrics = binary_metrics(labels, pred, p)
    tune.report({f"test_{k}": v for k, v in metrics.items()})
