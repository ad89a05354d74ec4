"""Step 1 of a round K >= 1: train a detector on the judgments of rounds < K and estimate its rates.

The judged items are split three ways, stratified by label and seeded: a training part, a held-out
part that picks the best epoch (``select.heldout_share``), and a calibration part
(``select.calibration_share``) that neither trained nor selected the detector. TPR alpha, TNR beta and
precision gamma come from the calibration part only, so Eq. 1's R is not biased by the epoch choice.
"""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path

import numpy as np

from hades_ray.io.hades_format import write_instances
from hades_ray.select.ratio import detector_rates

log = logging.getLogger(__name__)
HADES_KEYS = ("replaced", "replaced_ids", "hallucination", "id", "doc_id", "original_span", "replacement")
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
    from hades_ray.detect import api

    parts = split_judged(labels, sel.heldout_share, sel.calibration_share, config.seed + round_index)
    data = out / "detector" / "data"
    paths = {
        part: write_instances(
            [{k: r[k] for k in HADES_KEYS} for r, p in zip(labeled, parts) if p == part], data / f"{part}.txt"
        )
        for part in PARTS
    }
    counts = {part: int((parts == part).sum()) for part in PARTS}
    trained_config = round_detector_config(config)
    model_dir = Path(
        api.train_detector(
            trained_config, paths["train"], paths["heldout"], out / "detector" / "model",
            detector=sel.detector, mode="offline", workers=sel.detector_workers,
        )
    )  # fmt: skip
    calibration = [r for r, p in zip(labeled, parts) if p == "calibration"]
    _, pred = api.predict_records(model_dir, [{k: r[k] for k in HADES_KEYS} for r in calibration])
    rates = {**detector_rates(labels[parts == "calibration"], pred), "source": "calibration split"}
    detector = {
        "model_dir": str(model_dir),
        "backbone": trained_config.detect.backbone or trained_config.models.encoder,
        "heldout_metrics": api.evaluate_file(model_dir, paths["heldout"]),
        "calibration_metrics": api.evaluate_file(model_dir, paths["calibration"]),
    }
    if counts["calibration"] < 10:
        summary["messages"].append(
            f"alpha, beta and gamma rest on {counts['calibration']} calibration items: treat R as rough"
        )
    summary["counts"].update(counts)
    summary.update(detector=detector, rates=rates)
    done.write_text(json.dumps({"counts": {"judged_before": len(labeled), **counts}, "detector": detector,
                                "rates": rates}, indent=2), encoding="utf-8")  # fmt: skip
    return model_dir
