"""Step 1 of a round K >= 1: train a detector on the judgments of rounds < K and estimate its rates.

Two ways, by ``select.detector_training``:

* ``crossval`` (the paper: "using the accumulated data"): the detector trains on every judged item;
  the epoch and alpha, beta, gamma come from out-of-fold predictions (``select/crossval.py``).
* ``split``: the judged items are split three ways, stratified by label and seeded: a training part,
  a held-out part that picks the best epoch (``select.heldout_share``), and a calibration part
  (``select.calibration_share``) that neither trained nor selected the detector; TPR alpha, TNR beta
  and precision gamma come from the calibration part only.
"""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path

import numpy as np

from hades_ray.select.crossval import HADES_KEYS, backbone_of, crossval_detector
from hades_ray.select.crossval import write_records as _write
from hades_ray.select.ratio import detector_rates

log = logging.getLogger(__name__)
PARTS = ("train", "heldout", "calibration")
TRAINED = "trained.json"


def split_judged(labels: np.ndarray, heldout_share: float, calibration_share: float, seed: int) -> np.ndarray:
    """Each item's part (``train``, ``heldout`` or ``calibration``), stratified by label; every class
    keeps at least one training item, and the held-out and calibration parts get one each where the
    class has three or more."""
    rng = np.random.default_rng(seed)
    parts = np.full(len(labels), "train", dtype=object)
    for value in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == value))
        room = max(len(members) - 1, 0)
        n_cal = min(max(round(calibration_share * len(members)), 1 if room >= 2 else 0), room)
        n_held = min(max(round(heldout_share * len(members)), 1 if room - n_cal >= 1 else 0), room - n_cal)
        parts[members[:n_cal]] = "calibration"
        parts[members[n_cal : n_cal + n_held]] = "heldout"
    return parts


def round_detector_config(config):
    """The config the round's detector trains with: ``select.detector_backbone`` when set."""
    backbone = config.select.detector_backbone
    if not backbone:
        return config
    trained = copy.deepcopy(config)
    trained.detect.backbone = backbone
    return trained


def _too_few(summary: dict, n: int, n_h: int, round_index: int, minimum: int) -> None:
    message = (
        f"{n} consensus judgments ({n_h} H) before round {round_index}: too few (or one class) to train a "
        f"detector (select.min_train_instances={minimum}); this round samples at random"
    )
    log.warning(message)
    summary["messages"].append(message)


def train_round_detector(config, workdir, round_index: int, out: Path, summary: dict) -> Path | None:
    """Train, evaluate and calibrate the round's detector; None: too few judgments, sample at random.

    A detector already trained for this round (a rerun after a crash) is reused as it is."""
    from hades_ray.annotate.labels import consensus_items

    sel = config.select
    done = out / "detector" / TRAINED
    if done.is_file():
        saved = json.loads(done.read_text(encoding="utf-8"))
        summary["counts"].update(saved["counts"])
        summary.update(detector=saved["detector"], rates=saved["rates"])
        return Path(saved["detector"]["model_dir"])
    labeled = consensus_items(config, workdir, list(range(round_index)))
    labels = np.array([r["hallucination"] for r in labeled], dtype=int)
    summary["counts"]["judged_before"] = len(labeled)
    if len(labeled) < sel.min_train_instances or len(np.unique(labels)) < 2:
        _too_few(summary, len(labeled), int(labels.sum()) if len(labels) else 0, round_index, sel.min_train_instances)
        return None
    trained_config = round_detector_config(config)
    train = crossval_detector if sel.detector_training == "crossval" else split_detector
    result = train(trained_config, labeled, labels, out / "detector", round_index)
    counts, rates, detector = result["counts"], result["rates"], result["detector"]
    rated, what = (counts["calibration"], "calibration") if "calibration" in counts else (counts["rated"], "judged")
    if rated < 10:
        summary["messages"].append(f"alpha, beta and gamma rest on {rated} {what} items: treat R as rough")
    summary["counts"].update(counts)
    summary.update(detector=detector, rates=rates)
    done.write_text(json.dumps({"counts": {"judged_before": len(labeled), **counts}, "detector": detector,
                                "rates": rates}, indent=2), encoding="utf-8")  # fmt: skip
    return Path(result["model_dir"])


def split_detector(config, labeled: list[dict], labels: np.ndarray, folder: Path, round_index: int) -> dict:
    """Train on the training part, pick the epoch on the held-out part, rate on the calibration part."""
    from hades_ray.detect.data import LoadReport
    from hades_ray.detect.detector import Detector
    from hades_ray.detect.score_job import evaluate_file
    from hades_ray.train.fit import train_detector
    from hades_ray.metrics import binary_metrics

    sel = config.select
    parts = split_judged(labels, sel.heldout_share, sel.calibration_share, config.seed + round_index)
    paths = {part: _write([r for r, p in zip(labeled, parts) if p == part], folder / "data" / f"{part}.txt")
             for part in PARTS}  # fmt: skip
    model_dir = Path(
        train_detector(
            config, paths["train"], paths["heldout"], folder / "model",
            detector=sel.detector, mode="offline", workers=sel.detector_workers,
        )
    )  # fmt: skip
    calibration = [r for r, p in zip(labeled, parts) if p == "calibration"]
    trained = Detector.open(model_dir)
    p, pred = trained.score_records([{k: r[k] for k in HADES_KEYS} for r in calibration])
    calibration_labels = labels[parts == "calibration"]
    rates = {**detector_rates(calibration_labels, pred), "source": "calibration split"}
    detector = {
        "model_dir": str(model_dir),
        "backbone": backbone_of(config),
        "heldout_metrics": evaluate_file(trained, paths["heldout"]),
        # The calibration part is scored once (above, in-process): evaluate_file would score the same
        # items again from their file, on Ray, for the same metrics (none is quarantined: we wrote them).
        "calibration_metrics": {**binary_metrics(calibration_labels, pred, p), **LoadReport().summary()},
    }
    counts = {part: int((parts == part).sum()) for part in PARTS}
    return {"model_dir": model_dir, "counts": counts, "rates": rates, "detector": detector}
