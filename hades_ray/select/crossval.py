"""The round detector trained on every accumulated judgment, with the epoch and Eq. 1's alpha, beta and
gamma from cross-validated (out-of-fold) predictions: our reading of the paper's "using the accumulated
data" (App. C; §3.3: "based on the annotated instances in the previous rounds"), which describes no
cross-validation.

The judged items are cut into ``select.folds`` folds, stratified by label and seeded. Fold f's
detector trains on the other folds and picks its best epoch on fold f; its p(H) on fold f are that
fold's out-of-fold predictions, so every judged item is predicted by a detector that never trained
on it. The epoch count is the median of the folds' best epochs, and the round's detector trains on
all judged items for that many epochs (``detect.selection_metric=epoch`` keeps the last). alpha, beta
and gamma are the out-of-fold rates on the last round's judgments ("based on the annotation from
last round"), or on every round's with ``select.rates_from=all_rounds``.

A fold's epoch is chosen on the fold it then predicts, which can make its rates slightly optimistic;
the paper does not say how it chose either. ``detector/crossval.json`` records every fold's ids.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path

import numpy as np

from hades_ray.io.hades_format import LANGUAGE_FIELD, RECORD_FIELDS, write_instances
from hades_ray.pipeline import storage
from hades_ray.pipeline.steps import Step, digest_of, run_step
from hades_ray.select.ratio import detector_rates


def hades_fields(record: dict) -> dict:
    """The keys of a judged record that a detector reads, as a HaDes record."""
    language = {LANGUAGE_FIELD: record[LANGUAGE_FIELD]} if LANGUAGE_FIELD in record else {}
    return {k: record[k] for k in RECORD_FIELDS} | language


RECORD = "crossval.json"


def assign_folds(labels: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """Each item's fold in ``0 .. folds - 1``, stratified by label: the classes are dealt round the
    folds in a seeded order, one after the other, so fold sizes differ by one at most."""
    rng = np.random.default_rng(seed)
    fold = np.empty(len(labels), dtype=int)
    dealt = 0
    for value in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == value))
        fold[members] = (dealt + np.arange(len(members))) % folds
        dealt += len(members)
    return fold


def rated_mask(records: list[dict], round_index: int, rates_from: str) -> np.ndarray:
    """The items alpha, beta and gamma are measured on: the last judged round's, or all."""
    rounds = np.array([int(r["round"]) for r in records])
    if rates_from == "all_rounds" or not len(rounds):
        return np.ones(len(records), dtype=bool)
    return rounds == rounds.max()


def write_records(records: list[dict], path: Path) -> Path:
    """The judged ``records`` as a HaDes file (the keys a detector reads)."""
    return write_instances([hades_fields(r) for r in records], path)


def backbone_of(config) -> str:
    """The backbone a detector trained with this config builds on."""
    return config.detect.backbone or config.models.encoder


def _train(config, train: Path, valid: Path, output: Path, reps_from: tuple = ()) -> tuple[Path, dict]:
    from hades_ray.train.fit import train_detector

    sel = config.select
    model_dir = Path(train_detector(config, train, valid, output, detector=sel.detector, mode="offline",
                                        workers=sel.detector_workers, reps_from=reps_from))  # fmt: skip
    return model_dir, json.loads((model_dir / "metrics.json").read_text(encoding="utf-8"))


def _fixed_epochs(config, epochs: int):
    """``config`` training for exactly ``epochs`` epochs and keeping the last one."""
    fixed = copy.deepcopy(config)
    fixed.detect.epochs = epochs
    fixed.detect.selection_metric = "epoch"
    return fixed


def scored(detector, records: list[dict], detect, reps_from: tuple = ()) -> tuple[np.ndarray, np.ndarray]:
    """(p(H), pred) of judged records from their stored values where the stores ``reps_from`` hold them all
    (a frozen span classifier's head, a feature detector's linear model: ``hades_ray/detect/reps.py``),
    else the detector's own scoring."""
    from hades_ray.detect.data import instances_from_records
    from hades_ray.detect.reps import head_on_stored

    p = head_on_stored(detector, instances_from_records([hades_fields(r) for r in records]), reps_from, detect)
    if p is None:
        return detector.score_records([hades_fields(r) for r in records])
    return p, (p >= 0.5).astype(int)


def _fold(config, labeled: list[dict], held: np.ndarray, base: Path, reps_from: tuple = ()) -> dict:
    """Train on the items not ``held``, pick the epoch on the held ones: their p(H) and the fold's record."""
    from hades_ray.detect.detector import Detector

    train = [r for r, h in zip(labeled, held) if not h]
    predicted = [r for r, h in zip(labeled, held) if h]
    paths = write_records(train, base / "train.txt"), write_records(predicted, base / "predicted.txt")
    model_dir, metrics = _train(config, *paths, base / "model", reps_from)
    p = scored(Detector.open(model_dir), predicted, config.detect, reps_from)[0]
    record = {"train_ids": [str(r["id"]) for r in train], "predicted_ids": [str(r["id"]) for r in predicted],
              "best_epoch": int(metrics.get("epoch", config.detect.epochs - 1))}  # fmt: skip
    return {"p": [float(v) for v in p], "record": record}


def crossval_detector(
    config,
    labeled: list[dict],
    labels: np.ndarray,
    folder: Path,
    round_index: int,
    digest: str,
    force: bool = False,
    reps_from: tuple = (),
) -> dict:
    """Train the folds (steps sharing the detector's settings ``digest``) and the round's detector under
    ``folder``; returns its model_dir, counts, rates (out of fold) and what round.json says about it.
    ``reps_from``: span-representation stores holding the judged items (a frozen backbone runs no forward)."""
    sel = config.select
    fold = assign_folds(labels, sel.folds, config.seed + round_index)
    oof, folds = np.full(len(labeled), np.nan), []
    ids = [str(r["id"]) for r in labeled]
    for f in range(sel.folds):
        base = folder / "folds" / f"fold-{f}"
        fit = functools.partial(_fold, config, labeled, fold == f, base, reps_from)
        inputs = digest_of([ids, labels.tolist(), (fold == f).tolist()])
        done = run_step(Step(f"fold {f} of round {round_index}'s detector", str(base), digest, fit, inputs), force)
        oof[fold == f] = done["p"]
        folds.append({"fold": f, **done["record"]})
    best_epochs = [f["best_epoch"] for f in folds]
    epochs = int(np.ceil(np.median(best_epochs))) + 1  # epochs are counted from 0
    everything = write_records(labeled, folder / "data" / "all.txt")
    model_dir, fit = _train(_fixed_epochs(config, epochs), everything, everything, folder / "model", reps_from)
    rated = rated_mask(labeled, round_index, sel.rates_from)
    rates = {**detector_rates(labels[rated], (oof[rated] >= 0.5).astype(int)),
             "source": f"out-of-fold predictions of {sel.folds} folds, {sel.rates_from.replace('_', ' ')}"}  # fmt: skip
    record = {"folds": folds, "epochs": epochs, "ids": ids, "oof_p": oof.tolist(),
              "rated_ids": [i for i, m in zip(ids, rated) if m]}  # fmt: skip
    storage.write(folder / RECORD, json.dumps(record, indent=2))
    detector = {"model_dir": str(model_dir), "backbone": backbone_of(config), "epochs": epochs,
                "fold_best_epochs": best_epochs, "training_fit": fit,
                "oof_metrics": _oof_metrics(labels, oof)}  # fmt: skip
    counts = {"train": len(labeled), "folds": sel.folds, "rated": int(rated.sum())}
    return {"model_dir": model_dir, "counts": counts, "rates": rates, "detector": detector}


def _oof_metrics(labels: np.ndarray, oof: np.ndarray) -> dict:
    from hades_ray.metrics import binary_metrics

    return binary_metrics(labels, (oof >= 0.5).astype(int), oof)
