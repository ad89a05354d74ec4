"""The detector API the CLI, the jobs and the annotation rounds share.

A detector folder holds ``detector.json`` (its ``type``: transformer, lr or svm; read and written by
``hades_ray/detect/detector.py``), its weights, the resolved config and ``metrics.json`` of the best
epoch on the validation set.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hades_ray.config import ConfigError, HadesConfig, save_config
from hades_ray.detect.data import LoadReport, instances_from_records, load_labelled, numbered_instances
from hades_ray.detect.description import write_description
from hades_ray.detect.detector import Detector
from hades_ray.detect.settings import DETECTORS, MODES
from hades_ray.io.hades_format import Instance, write_instances
from hades_ray.metrics import binary_metrics, write_metrics
from hades_ray.pipeline import storage

if TYPE_CHECKING:
    from hades_ray.pipeline.executor import Executor

log = logging.getLogger(__name__)


def _ray(config: HadesConfig):
    from hades_ray.ray_runtime import init_ray

    return init_ray(config.ray.address, config.ray.num_cpus)


def _linear_settings(config: HadesConfig, kind: str) -> dict:
    d = config.detect
    return {
        "type": kind,
        "mode": "offline",
        "mlm": config.models.mlm,
        "feature_window": d.feature_window,
        "spacy_model": config.spacy_model,
    }


def _train_linear(config: HadesConfig, kind: str, train: list[Instance], valid: list[Instance], out: Path) -> dict:
    from hades_ray.detect.feature_pipeline import FEATURE_NAMES, feature_matrix
    from hades_ray.detect.lexical import LexicalStats
    from hades_ray.detect.linear import fit_linear, predict_linear, save_linear

    d = config.detect
    settings = _linear_settings(config, kind)
    lexical = LexicalStats.fit([i.words for i in train], d.ppmi_vocab, d.ppmi_window)
    X = feature_matrix(train + valid, lexical, settings, d)  # judged sets: small, in-process
    y = np.array([i.label for i in train])
    params = fit_linear(kind, X[: len(train)], y, d, config.seed, list(FEATURE_NAMES))
    p, pred = predict_linear(params, X[len(train) :])
    save_linear(params, out)
    lexical.save(out)
    write_description(out, settings)
    return {"iterations": params["iterations"], **binary_metrics([i.label for i in valid], pred, p)}


def _train_transformer(config: HadesConfig, mode: str, workers: int, train, valid, out: Path) -> dict:
    from hades_ray.detect.trainer import detector_settings, export_best, fit_transformer

    _, best, best_metrics = fit_transformer(config, train, valid, out, mode, workers)
    export_best(best, detector_settings(config, mode), out)
    keep = (
        "epoch",
        "train_loss",
        "examples_per_s",
        "selection_score",
        "n",
        "accuracy",
        "h_precision",
        "h_recall",
        "h_f1",
        "n_precision",
        "n_recall",
        "n_f1",
        "gmean",
        "bss",
        "auc",
    )
    return {k: best_metrics[k] for k in keep if k in best_metrics}


def train_detector(
    config: HadesConfig,
    train_path,
    valid_path,
    output_dir,
    detector: str = "transformer",
    mode: str = "offline",
    workers: int = 1,
) -> Path:
    """Train a detector; returns its folder, holding ``metrics.json`` of the best epoch on ``valid_path``."""
    if detector not in DETECTORS:
        raise ConfigError(f"detector {detector!r}: choose one of {', '.join(DETECTORS)}")
    if mode not in MODES:
        raise ConfigError(f"mode {mode!r}: choose offline or online")
    if detector != "transformer" and mode != "offline":
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
    if detector == "transformer":
        metrics = _train_transformer(config, mode, workers, train, valid, out)
    else:
        metrics = _train_linear(config, detector, train, valid, out)
    write_metrics(metrics, out, name=f"{detector} ({mode})")
    threshold = _store_validation_threshold(out, valid, config)
    summary = {
        "detector": detector,
        "mode": mode,
        "workers": workers,
        "train": len(train),
        "valid": len(valid),
        "threshold": threshold,
        **report.summary(),
    }
    storage.write(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    log.info("detector saved to %s: %s", out, summary)
    return out


def _store_validation_threshold(model_dir: Path, valid: list[Instance], config: HadesConfig) -> dict:
    """Score the validation set with the exported detector and store the threshold ``score`` flags at."""
    from hades_ray.detect.threshold import choose_threshold

    detector = Detector.open(model_dir)
    p, _ = score_instances(detector, valid, config)
    choice = choose_threshold([i.label for i in valid], p)
    detector.store_threshold(choice)
    return choice


def score_instances(detector: Detector, instances: list[Instance], config: HadesConfig) -> tuple:
    """(p(H), pred) of in-memory instances, in-process (no Ray): the driver writes them once into the
    scoring job's temporary folder, and the job reads them from there (``hades_ray/detect/score_job.py``)."""
    from hades_ray.detect.score_job import score_arrays, score_rows, scoring_folder
    from hades_ray.pipeline.executor import Executor

    with scoring_folder() as folder:
        data = write_instances(instances, folder / "input.jsonl")
        rows = list(range(len(instances)))  # one instance per line
        executor = Executor.of(config.ray, "local")
        return score_arrays(score_rows(detector, config.detect, data, rows, folder, executor, labelled_only=False))


def predict_file(
    model_dir, data_path, output_path, config: HadesConfig | None = None, executor: Executor | None = None
) -> Path:
    """Score every instance of ``data_path`` (labelled or not), on Ray per the config unless ``executor``
    says otherwise; writes JSONL with the input records plus ``p_hallucination`` and ``pred``. The shard
    parts live in ``OUTPUT.parts/`` until the JSONL is written (an interrupted run resumes from them)."""
    from hades_ray.detect.score_job import predicted_records, score_rows, scoring_folder
    from hades_ray.pipeline.executor import Executor

    detector = Detector.open(model_dir)
    config = config or detector.config()
    report = LoadReport()
    output = Path(output_path)
    rows = [row for row, _ in numbered_instances(data_path, config.detect.skip_bad, report)]
    report.write_quarantine(output.parent)
    executor = executor or Executor.of(config.ray)
    with scoring_folder(output.with_name(output.name + ".parts")) as folder:
        scores = score_rows(detector, config.detect, data_path, rows, folder, executor, labelled_only=False)
        return write_instances(predicted_records(data_path, scores), output)


def evaluate_file(
    model_dir,
    data_path,
    config: HadesConfig | None = None,
    executor: Executor | None = None,
    parts: Path | None = None,
) -> dict:
    """The paper's metrics on the labelled instances of ``data_path`` (-1 ones are ignored), scored on
    Ray per the config unless ``executor`` says otherwise; the shard parts live in ``parts`` (or a
    temporary folder) until the metrics are computed."""
    from hades_ray.detect.score_job import score_arrays, score_rows, scoring_folder
    from hades_ray.pipeline.executor import Executor

    detector = Detector.open(model_dir)
    config = config or detector.config()
    report = LoadReport()
    rows, labels = [], []
    for row, instance in numbered_instances(data_path, config.detect.skip_bad, report, labelled_only=True):
        rows.append(row)
        labels.append(instance.label)
    executor = executor or Executor.of(config.ray)
    with scoring_folder(parts) as folder:
        p, pred = score_arrays(score_rows(detector, config.detect, data_path, rows, folder, executor, True))
    return {**binary_metrics(labels, pred, p), **report.summary()}


def predict_records(model_dir, records: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """(p(H), predicted label) of in-memory HaDes records, in-process (no Ray): for small sets."""
    detector = Detector.open(model_dir)
    p, pred = score_instances(detector, instances_from_records(records), detector.config())
    return np.asarray(p, dtype=np.float64), np.asarray(pred, dtype=int)


def score_records(model_dir, records: list[dict]) -> np.ndarray:
    """p(H) of in-memory HaDes records, in-process (no Ray): for small sets."""
    return predict_records(model_dir, records)[0]
