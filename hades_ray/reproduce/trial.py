"""One trial of the grid: train one detector (a Ray Train fit for the transformers, scikit-learn for
LR/SVM: ``train.fit.train_detector`` either way), score the test split with its best epoch, and write
the predictions the tables are computed from.

A trial is a step (``hades_ray/pipeline/steps.py``) in ``OUT/cells/<row>-<mode>/`` (named by the cell,
not by Tune's trial id): a finished cell with the same config and dataset is kept, an unfinished one
starts afresh.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

from hades_ray.detect.data import LoadReport, numbered_instances
from hades_ray.metrics import binary_metrics
from hades_ray.pipeline.steps import Step, digest_of, files_identity, run_step
from hades_ray.pipeline.storage import delete, write, write_json_atomic
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


def epoch_split(config) -> str:
    """valid or train_slice: which split picks the best epoch (``reproduce.epoch_split``, auto resolved)."""
    choice = config.reproduce.epoch_split
    if choice == "auto":
        return "train_slice" if config.reproduce.test_split == "valid" else "valid"
    return choice


def training_files(config, dataset: str | Path, folder: Path) -> tuple[Path, Path]:
    """(what trains, what picks the epoch): train.txt and valid.txt, or with ``train_slice`` train.txt cut
    in two by a seeded hash of each instance's document (its line where the file names none), written
    under ``folder``. Every trial cuts the same way, so every row is picked on the same slice."""
    from hades_ray.train.learnability import split_by_doc
    from hades_ray.io.hades_format import read_instances, write_instances

    if epoch_split(config) == "valid":
        return split_path(dataset, "train"), split_path(dataset, "valid")
    instances = read_instances(split_path(dataset, "train"), skip_bad=config.detect.skip_bad)
    lines = {id(instance): line for line, instance in enumerate(instances)}
    share = config.reproduce.epoch_slice_share
    kept, picked = split_by_doc(instances, (1 - share, share), config.seed,
                                doc=lambda i: i.extra.get("doc_id", f"line-{lines[id(i)]}"))  # fmt: skip
    paths = folder / "train-without-slice.txt", folder / "epoch-slice.txt"
    for part, path in zip((kept, picked), paths):
        write_instances(part, path)
    return paths


def cell_folder(output: str | Path, cell: Cell) -> Path:
    return Path(output) / "cells" / cell.key


def fault_setting() -> str:
    """The driver's ``FAULT_ENV`` (trial processes are Ray workers: they do not see the driver's environment)."""
    return os.environ.get(FAULT_ENV, "")


def _maybe_fail(cell: Cell, fault: str) -> None:
    key, _, marker = fault.partition(":")
    if key == cell.key and marker and not os.path.exists(marker):
        write(marker, "raised once\n")
        raise RuntimeError(f"injected fault in trial {cell.key} ({FAULT_ENV})")


def cell_step(base: dict, grid: Grid, cell: Cell, dataset: str, output: str, fault: str = "") -> Step:
    """A cell's trial as a step: its config and the dataset's splits are what it depends on."""
    config = cell_config(base, grid, cell)
    folder = cell_folder(output, cell)
    fit = functools.partial(_fit, config, grid, cell, dataset, folder, fault)
    splits = [split_path(dataset, s) for s in ("train", "valid", config.reproduce.test_split)]
    return Step(f"trial {cell.key}", str(folder), digest_of(config.to_dict()), fit, files_identity(*splits))


def table_trial(
    trial: dict, base: dict, grid: Grid, dataset: str, output: str, fault: str = "", force: bool = False
) -> None:
    """Tune's function trainable: ``trial["cell"]`` is one (row, mode) of the grid."""
    from ray import tune

    step = cell_step(base, grid, Cell(**trial["cell"]), dataset, output, fault)
    run_step(step, force)
    record = json.loads((Path(step.output) / PREDICTIONS).read_text(encoding="utf-8"))
    metrics = binary_metrics(record["labels"], record["pred"], record["p"])
    tune.report({f"test_{k}": v for k, v in metrics.items()})


def _fit(config, grid: Grid, cell: Cell, dataset: str, folder: Path, fault: str) -> None:
    from hades_ray.detect.detector import Detector
    from hades_ray.detect.reps import file_stores, stored_file_scores
    from hades_ray.train.transformer import detector_settings
    from hades_ray.train.fit import train_detector

    delete(folder / PREDICTIONS)  # a restarted trial never leaves an older cell's file
    _maybe_fail(cell, fault)
    detector = grid.row(cell.row).detector
    # A frozen backbone: every cell of a view reads the train split's one store (an epoch slice is a subset).
    reps_from = file_stores([split_path(dataset, "train")], {**detector_settings(config, cell.mode),
                            "type": detector}, config)  # fmt: skip
    model = train_detector(
        config,
        *training_files(config, dataset, folder),
        folder / "detector",
        detector,
        cell.mode,
        config.detect.workers,
        reps_from=reps_from,
    )
    ids, items = test_items(dataset, config.reproduce.test_split, config.detect.skip_bad)
    trained = Detector.open(model)
    p = stored_file_scores(trained, items, split_path(dataset, config.reproduce.test_split), config)
    p, pred = trained.score_instances(items, config.detect) if p is None else (p, (p >= 0.5).astype(int))
    record = {
        "cell": {"row": cell.row, "mode": cell.mode},
        "detector": detector,
        "backbone": config.detect.backbone if detector == "transformer" else config.models.mlm,
        "revision": config.models.revisions.get(config.detect.backbone) if detector == "transformer" else None,
        "best_epoch": json.loads((model / "metrics.json").read_text(encoding="utf-8")).get("epoch"),
        "ids": ids,
        "labels": [i.label for i in items],
        "p": [float(v) for v in p],
        "pred": [int(v) for v in pred],
    }
    write_json_atomic(folder / PREDICTIONS, record)
