"""The round detector's two trainings side by side on a work directory with judged rounds
(``hades-ray reproduce round-detector``; ``make demo-loop`` makes one): ``split`` (60% trains, 20% picks
the epoch, 20% calibrates alpha, beta, gamma) against ``crossval`` (the paper: every judged item trains,
epoch and rates from out-of-fold predictions).

Both train on the judgments of rounds before the test round, with the config that round ran with, and
are scored on that round's judged items, which neither saw: the detector's G-Mean and AUC there, and how
far its estimated alpha, beta, gamma (and Eq. 1's R from them) fall from the ones it actually has on the
new round. The labels are whatever judged the work directory (SIMULATED judges for make demo-loop).
Writes ``OUTPUT/round_detector.json`` (one row per training) and ``.md``; the detectors are trained under
``OUTPUT/split`` and ``OUTPUT/crossval`` (crossval's folds are steps: a rerun reads finished folds back).
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path

import numpy as np

from hades_ray.pipeline.laps import Laps
from hades_ray.pipeline.storage import write, write_json_atomic

log = logging.getLogger(__name__)
RATES = ("alpha", "beta", "gamma")
TRAININGS = ("split", "crossval")
RESULTS = "round_detector"


def _ratio(rates: dict) -> float | None:
    from hades_ray.select.ratio import explain_ratio

    return explain_ratio(rates["alpha"], rates["beta"], rates["gamma"]).raw


def compare(config, workdir: Path, test_round: int, output: Path, training: str, force: bool = False) -> dict:
    """One training's detector on the rounds before ``test_round``, scored on that round's judged items."""
    from hades_ray.pool.labels import consensus_items
    from hades_ray.detect.detector import Detector
    from hades_ray.metrics import binary_metrics
    from hades_ray.select.crossval import crossval_detector, hades_fields
    from hades_ray.select.detector import detector_digest, round_detector_config, split_detector
    from hades_ray.select.ratio import detector_rates

    chosen = copy.deepcopy(config)
    chosen.select.detector_training = training
    trained = round_detector_config(chosen)
    labeled = consensus_items(config, workdir, list(range(test_round)))
    labels = np.array([r["hallucination"] for r in labeled], dtype=int)
    log.info("round detector (%s): training on %d judged items of rounds < %d", training, len(labeled), test_round)
    laps = Laps()
    folder = output / training
    if training == "crossval":
        result = crossval_detector(trained, labeled, labels, folder, test_round, detector_digest(chosen), force)
    else:
        result = split_detector(trained, labeled, labels, folder, test_round)
    seconds = laps.lap()
    test = consensus_items(config, workdir, [test_round])
    y = np.array([r["hallucination"] for r in test], dtype=int)
    p, pred = Detector.open(result["model_dir"]).score_records([hades_fields(r) for r in test])
    actual = detector_rates(y, pred)
    estimated = result["rates"]
    row = {
        "training": training,
        "judged_before": len(labeled),
        "trained_on": result["counts"]["train"],
        "rated_on": result["counts"].get("calibration", result["counts"].get("rated")),
        "test_items": len(test),
        "test": {k: binary_metrics(y, pred, p)[k] for k in ("gmean", "auc", "accuracy")},
        "estimated": {k: estimated[k] for k in RATES},
        "actual": {k: actual[k] for k in RATES},
        "rate_error": float(np.mean([abs(estimated[k] - actual[k]) for k in RATES])),
        "R_estimated": _ratio(estimated),
        "R_actual": _ratio(actual),
        "train_seconds": round(seconds, 1),
    }
    log.info("round detector (%s): test G-Mean %.3f on %d items of round %d, rate error %.3f", training,
             row["test"]["gmean"], len(test), test_round, row["rate_error"])  # fmt: skip
    return row


def markdown(rows: list[dict], command: str) -> str:
    from hades_ray.markdown import pipe_table

    columns = ["training", "trained on", "rates on", "test items", "test G-Mean", "test AUC"]
    columns += ["est. alpha/beta/gamma", "actual alpha/beta/gamma", "mean abs error", "R est.", "R actual", "train s"]
    cells = []
    for r in rows:
        est = "/".join(f"{r['estimated'][k]:.3f}" for k in RATES)
        act = "/".join(f"{r['actual'][k]:.3f}" for k in RATES)
        ratios = [f"{v:.3f}" if v is not None else "undefined" for v in (r["R_estimated"], r["R_actual"])]
        cells.append([r["training"], r["trained_on"], r["rated_on"], r["test_items"], f"{r['test']['gmean']:.3f}"])
        cells[-1] += [f"{r['test']['auc']:.3f}", est, act, f"{r['rate_error']:.3f}", *ratios, r["train_seconds"]]
    return "\n".join([f"# Round detector: split vs crossval\n\n`{command}`\n", *pipe_table(columns, cells)]) + "\n"


def round_config(workdir: Path, test_round: int, overrides: list[str]):
    """The config the test round ran with (its ``config.resolved.yaml``), with ``overrides`` on top."""
    from hades_ray.config import load_saved_config, set_dotted, validate
    from hades_ray.pool.layout import round_dir

    config = load_saved_config(round_dir(workdir, test_round) / "config.resolved.yaml")
    for assignment in overrides:
        set_dotted(config, assignment)
    validate(config)
    return config


def compare_round_detectors(
    workdir: str | Path, test_round: int, output: str | Path, overrides: list[str] = (), command: str = "",
    force: bool = False,
) -> list[dict]:  # fmt: skip
    """Both trainings compared on ``test_round``; writes OUTPUT/round_detector.json and .md."""
    workdir, output = Path(workdir), Path(output)
    config = round_config(workdir, test_round, list(overrides))
    rows = [compare(config, workdir, test_round, output, training, force) for training in TRAININGS]
    write_json_atomic(output / f"{RESULTS}.json", rows)
    write(output / f"{RESULTS}.md", markdown(rows, command or f"round detector of {workdir}, round {test_round}"))
    return rows
