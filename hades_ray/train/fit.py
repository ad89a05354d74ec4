"""``hades-ray train``: a detector trained on a judged set, written as a detector folder with
``metrics.json`` of its best epoch on the validation set and the threshold chosen there.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np

from hades_ray.config import ConfigError, HadesConfig, save_config
from hades_ray.detect.data import LoadReport, load_labelled
from hades_ray.detect.description import write_description
from hades_ray.detect.detector import Detector
from hades_ray.detect.probe import PROBE, probe_config
from hades_ray.detect.settings import DETECTORS, MODES
from hades_ray.io.hades_format import Instance
from hades_ray.metrics import binary_metrics, write_metrics
from hades_ray.pipeline import storage
from hades_ray.text.pipeline import text_settings

log = logging.getLogger(__name__)
TRAIN_DETECTORS = (*DETECTORS, PROBE)  # what ``hades-ray train --detector`` takes


def _ray(config: HadesConfig):
    from hades_ray.ray_runtime import init_ray

    return init_ray(config.ray.address, config.ray.num_cpus)


def linear_settings(config: HadesConfig, kind: str) -> dict:
    d = config.detect
    return {
        "type": kind,
        "mode": "offline",
        "mlm": config.models.mlm,
        "feature_window": d.feature_window,
        **text_settings(config),  # the spaCy pipeline, and the language where it is not English
    }


_linear_settings = linear_settings  # the name tests and older callers use


def _train_linear(
    config: HadesConfig, kind: str, train: list[Instance], valid: list[Instance], out: Path, paths=(), reps_from=()
) -> dict:
    from hades_ray.detect.features.stages import FEATURE_NAMES, corpus_features, feature_matrix, stack_features
    from hades_ray.detect.features.lexical import LexicalStats
    from hades_ray.detect.features.linear import fit_linear, predict_linear, save_linear
    from hades_ray.detect.reps import stored_features

    d = config.detect
    settings = linear_settings(config, kind)
    lexical = LexicalStats.fit([i.words for i in train], d.ppmi_vocab, d.ppmi_window)
    # The MLM and spaCy features from the files' stores (made once per file or pool); the corpus statistics
    # depend on the training set, so they are computed here either way.
    stored = stored_features(train + valid, list(paths), settings, config, reps_from) if paths else None
    if stored is not None:
        X = stack_features(stored, corpus_features(lexical, stored))
    else:
        X = feature_matrix(train + valid, lexical, settings, d)  # judged sets: small, in-process
    y = np.array([i.label for i in train])
    params = fit_linear(kind, X[: len(train)], y, d, config.seed, list(FEATURE_NAMES))
    p, pred = predict_linear(params, X[len(train) :])
    save_linear(params, out)
    lexical.save(out)
    write_description(out, settings)
    return {"iterations": params["iterations"], **binary_metrics([i.label for i in valid], pred, p)}


def stored_vectors(config: HadesConfig, mode: str, data: dict, reps_from=()) -> tuple | None:
    """(train vectors, validation vectors, what the stores did) when the span classifier's backbone is
    frozen and ``detect.reuse_frozen`` is on (``hades_ray/detect/reps.py``), else None. ``data`` maps
    train and valid to (instances, path); ``reps_from`` are stores to look the instances up in first."""
    from hades_ray.detect.reps import instance_vectors, reuses_store, store_executor
    from hades_ray.train.transformer import detector_settings

    settings = detector_settings(config, mode)
    if not reuses_store(settings, config.detect):
        return None
    executor, out, made = store_executor(config), [], {}
    for part, (instances, path) in data.items():
        found, store = instance_vectors(instances, path, settings, config.detect, executor, reps_from)
        out.append(found)
        made[part] = {"store": store.folder, "shards_made_now": store.made_now, "shards_reused": store.reused}
    return out[0], out[1], made


def _train_transformer(config: HadesConfig, mode: str, workers: int, train, valid, out: Path, reps, extra=None) -> dict:
    from hades_ray.train.transformer import detector_settings, export_best, fit_transformer

    best, best_metrics, _ = fit_transformer(config, train, valid, out, mode, workers, reps)
    export_best(best, detector_settings(config, mode) | (extra or {}), out)
    # metrics.json: the best epoch's training figures and validation metrics (not Ray's bookkeeping).
    keep = "epoch train_loss examples_per_s selection_score n accuracy h_precision h_recall h_f1".split()
    keep += "n_precision n_recall n_f1 gmean bss auc".split()
    return {k: best_metrics[k] for k in keep if k in best_metrics}


def train_detector(
    config: HadesConfig,
    train_path,
    valid_path,
    output_dir,
    detector: str = "transformer",
    mode: str = "offline",
    workers: int = 1,
    reps_from: tuple = (),
) -> Path:
    """Train a detector; returns its folder, holding ``metrics.json`` of the best epoch on ``valid_path``.
    A frozen span classifier trains on stored span vectors (looked up in the stores ``reps_from`` first,
    else in the files' own stores, made where missing). ``probe``: a span classifier on a causal
    generator's own states, always online (``hades_ray/detect/probe.py``)."""
    if detector not in TRAIN_DETECTORS:
        raise ConfigError(f"detector {detector!r}: choose one of {', '.join(TRAIN_DETECTORS)}")
    if mode not in MODES:
        raise ConfigError(f"mode {mode!r}: choose offline or online")
    if detector == PROBE:
        config, mode = probe_config(config), "online"
    if detector not in ("transformer", PROBE) and mode != "offline":
        raise ConfigError("the feature detectors (lr, svm) are offline only, as in the paper")
    out = Path(output_dir)
    storage.makedirs(out)
    report = LoadReport()
    train = load_labelled(train_path, config.detect.skip_bad, report)
    valid = load_labelled(valid_path, config.detect.skip_bad, report)
    if len({i.label for i in train}) < 2:
        raise ConfigError(f"{train_path}: training needs both labels 0 and 1 among the labelled instances")
    report.write_quarantine(out)
    save_config(config, out)
    _ray(config)
    reps, stores = None, {}
    if detector in ("transformer", PROBE):
        reps = stored_vectors(config, mode, {"train": (train, train_path), "valid": (valid, valid_path)}, reps_from)
        stores = {"span_reps": reps[2]} if reps else {}
        extra = {PROBE: True} if detector == PROBE else {}
        metrics = _train_transformer(config, mode, workers, train, valid, out, reps, extra)
    else:
        metrics = _train_linear(config, detector, train, valid, out, (train_path, valid_path), reps_from)
    write_metrics(metrics, out, name=f"{detector} ({mode})")
    threshold = _store_validation_threshold(out, valid, config, None if reps is None else reps[1])
    summary = {
        "detector": detector,
        "mode": mode,
        "workers": workers,
        "train": len(train),
        "valid": len(valid),
        "threshold": threshold,
        **report.summary(),
        **stores,
    }
    storage.write(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    log.info("detector saved to %s: %s", out, summary)
    return out


def _store_validation_threshold(model_dir: Path, valid: list[Instance], config: HadesConfig, reps=None) -> dict:
    """Score the validation set with the exported detector (its head on ``reps``, the set's stored span
    vectors, when given) and store the threshold ``score`` flags at."""
    from hades_ray.detect.reps import head_scores
    from hades_ray.detect.threshold import choose_threshold

    detector = Detector.open(model_dir)
    p = detector.score_instances(valid, config.detect)[0] if reps is None else head_scores(detector.load_head(), reps)
    choice = choose_threshold([i.label for i in valid], p)
    detector.store_threshold(choice)
    return choice
