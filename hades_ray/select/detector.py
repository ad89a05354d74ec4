"""Step 1 of a round K >= 1: train a detector on the judgments of rounds < K and estimate its rates.

Two ways, by ``select.detector_training``:

* ``crossval`` (our reading of the paper's "using the accumulated data", App. C, which names no
  method): the detector trains on every judged item;
  the epoch and alpha, beta, gamma come from out-of-fold predictions (``select/crossval.py``).
* ``split``: the judged items are split three ways, stratified by label and seeded: a training part,
  a held-out part that picks the best epoch (``select.heldout_share``), and a calibration part
  (``select.calibration_share``) that neither trained nor selected the detector; TPR alpha, TNR beta
  and precision gamma come from the calibration part only.

The fit is a step (``hades_ray/pipeline/steps.py``) whose digest covers the training settings and
whose inputs are the judgments: a changed setting or judgment stops a rerun unless ``--force`` retrains.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import logging
from pathlib import Path

import numpy as np

from hades_ray.pipeline.steps import Step, digest_of
from hades_ray.pool.layout import pool_dir, round_dir
from hades_ray.pool.readers import pool_shards
from hades_ray.select.crossval import backbone_of, crossval_detector, scored, write_records
from hades_ray.select.ratio import detector_rates

log = logging.getLogger(__name__)
PARTS = ("train", "heldout", "calibration")
# How a fit is spread over the machine, not what it learns: left out of the detector's digest.
RESOURCES = ("workers", "worker_cpus", "use_gpu", "torch_threads", "max_failures", "actors", "actor_cpus")
TRAINING = ("detector", "detector_training", "folds", "rates_from", "heldout_share", "calibration_share")


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


def too_few(labeled: list[dict], round_index: int, minimum: int) -> str:
    """Why the round samples at random (too few judgments, or one class); empty when a detector trains."""
    n_h = sum(int(r["hallucination"]) for r in labeled)
    if len(labeled) >= minimum and 0 < n_h < len(labeled):
        return ""
    return (
        f"{len(labeled)} consensus judgments ({n_h} H) before round {round_index}: too few (or one class) to "
        f"train a detector (select.min_train_instances={minimum}); this round samples at random"
    )


def detector_digest(config) -> str:
    """The settings the round's detector depends on (its training, backbone and seed; not its resources)."""
    trained = round_detector_config(config)
    detect = {k: v for k, v in dataclasses.asdict(trained.detect).items() if k not in RESOURCES}
    select = {k: getattr(config.select, k) for k in TRAINING}
    return digest_of([detect, select, dataclasses.asdict(trained.models), config.seed])


def detector_step(
    config, workdir, round_index: int, labeled: list[dict], force: bool = False, executor=None, shards=None
) -> Step:
    """The fit of round ``round_index``'s detector on ``labeled`` (its folds are steps too, redone by ``force``).
    With a frozen backbone, ``executor`` makes the pool's span-representation store first (``shards``: the
    pool's), which the fit, its folds and the round's scores pass read: no backbone forward after it."""
    folder = round_dir(workdir, round_index) / "detector"
    judged = [[str(r["id"]), int(r["hallucination"]), int(r["round"])] for r in labeled]
    digest = detector_digest(config)
    fit = functools.partial(_fit, round_detector_config(config), labeled, Path(workdir), round_index, digest, force,
                            executor, shards)  # fmt: skip
    return Step(f"round {round_index}'s detector", str(folder), digest, fit, digest_of(judged))


def pool_reps(config, workdir, executor=None, shards=None) -> tuple[str, ...]:
    """The pool's span-representation store for the round detector's view (``hades_ray/detect/reps.py``),
    made by the first round that needs it and read by every later one; () when the backbone trains or
    ``detect.reuse_frozen`` is off."""
    from hades_ray.detect.reps import pool_store, store_executor, store_view_of
    from hades_ray.train.fit import linear_settings
    from hades_ray.train.transformer import detector_settings

    kind = config.select.detector
    settings = {**detector_settings(config, "offline"), "type": kind} if kind == "transformer" else \
        linear_settings(config, kind)  # fmt: skip
    view = store_view_of(settings, config.detect)
    if view is None:
        return ()
    shards = shards if shards is not None else pool_shards(pool_dir(workdir))
    executor = executor or store_executor(config)
    store = pool_store(workdir, shards, view, config.detect, executor, config.select.score_num_gpus)
    return (store.folder,)


def _fit(config, labeled: list[dict], workdir: Path, round_index: int, digest: str, force: bool,
         executor=None, shards=None) -> dict:  # fmt: skip
    folder = round_dir(workdir, round_index) / "detector"
    labels = np.array([r["hallucination"] for r in labeled], dtype=int)
    reps_from = pool_reps(config, workdir, executor, shards)
    if config.select.detector_training == "crossval":
        result = crossval_detector(config, labeled, labels, folder, round_index, digest, force, reps_from)
    else:
        result = split_detector(config, labeled, labels, folder, round_index, reps_from)
    if config.select.rates_from == "previous_detector":
        result["rates"] = previous_detector_rates(workdir, labeled, round_index, reps_from) or result["rates"]
    counts = {"judged_before": len(labeled), **result["counts"]}
    return {"model_dir": str(result["model_dir"]), "counts": counts, "rates": result["rates"],
            "detector": result["detector"]}  # fmt: skip


def previous_detector_rates(workdir: Path, labeled: list[dict], round_index: int, reps_from=()) -> dict | None:
    """alpha, beta, gamma as the paper's §3.3 reads literally: round K-1's judged batch scored by round K-1's
    own detector, the one that selected it; None where round K-1 had none (round 1: round 0 samples at random)."""
    import json

    from hades_ray.detect.detector import Detector

    previous = round_dir(workdir, round_index - 1) / "round.json"
    model_dir = (json.loads(previous.read_text(encoding="utf-8")).get("detector") or {}).get("model_dir")
    batch = [r for r in labeled if int(r["round"]) == round_index - 1]
    if not model_dir or not batch:
        return None
    previous = Detector.open(model_dir)
    _, pred = scored(previous, batch, previous.config().detect, reps_from)
    rates = detector_rates([int(r["hallucination"]) for r in batch], pred)
    return {**rates, "source": f"round {round_index - 1}'s batch scored by round {round_index - 1}'s detector"}


def record_detector(summary: dict, trained: dict) -> None:
    """round.json's detector, rates and counts from the fit's result."""
    counts = trained["counts"]
    rated, what = (counts["calibration"], "calibration") if "calibration" in counts else (counts["rated"], "judged")
    if rated < 10:
        summary["messages"].append(f"alpha, beta and gamma rest on {rated} {what} items: treat R as rough")
    summary["counts"].update(counts)
    summary.update(detector=trained["detector"], rates=trained["rates"])


def split_detector(
    config, labeled: list[dict], labels: np.ndarray, folder: Path, round_index: int, reps_from: tuple = ()
) -> dict:
    """Train on the training part, pick the epoch on the held-out part, rate on the calibration part."""
    from hades_ray.detect.data import LoadReport
    from hades_ray.detect.detector import Detector
    from hades_ray.metrics import binary_metrics
    from hades_ray.train.fit import train_detector

    sel = config.select
    parts = split_judged(labels, sel.heldout_share, sel.calibration_share, config.seed + round_index)
    paths = {part: write_records([r for r, p in zip(labeled, parts) if p == part], folder / "data" / f"{part}.txt")
             for part in PARTS}  # fmt: skip
    model_dir = Path(
        train_detector(
            config, paths["train"], paths["heldout"], folder / "model",
            detector=sel.detector, mode="offline", workers=sel.detector_workers, reps_from=reps_from,
        )
    )  # fmt: skip
    calibration = [r for r, p in zip(labeled, parts) if p == "calibration"]
    trained = Detector.open(model_dir)
    p, pred = scored(trained, calibration, config.detect, reps_from)
    calibration_labels = labels[parts == "calibration"]
    rates = {**detector_rates(calibration_labels, pred), "source": "calibration split"}
    detector = {
        "model_dir": str(model_dir),
        "backbone": backbone_of(config),
        "heldout_metrics": _heldout_metrics(trained, paths["heldout"], labeled, labels, parts, config, reps_from),
        # The calibration part is scored once (above, in-process): evaluate_file would score the same
        # items again from their file, on Ray, for the same metrics (none is quarantined: we wrote them).
        "calibration_metrics": {**binary_metrics(calibration_labels, pred, p), **LoadReport().summary()},
    }
    counts = {part: int((parts == part).sum()) for part in PARTS}
    return {"model_dir": model_dir, "counts": counts, "rates": rates, "detector": detector}


def _heldout_metrics(trained, path: Path, labeled: list[dict], labels, parts, config, reps_from: tuple) -> dict:
    """The held-out part's metrics: from stored span vectors where the pool's store holds them, else
    ``evaluate_file`` on its file."""
    from hades_ray.detect.data import LoadReport
    from hades_ray.detect.score_job import evaluate_file
    from hades_ray.metrics import binary_metrics

    if not reps_from:
        return evaluate_file(trained, path)
    p, pred = scored(trained, [r for r, part in zip(labeled, parts) if part == "heldout"], config.detect, reps_from)
    return {**binary_metrics(labels[parts == "heldout"], pred, p), **LoadReport().summary()}
