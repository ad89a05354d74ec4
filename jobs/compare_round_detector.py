"""The round detector's two trainings side by side on a finished work directory (``make demo-loop``):
``split`` (60% trains, 20% picks the epoch, 20% calibrates alpha, beta, gamma) against ``crossval`` (the
paper: every judged item trains, epoch and rates from out-of-fold predictions of the last round).

Both train on the judgments of rounds before ``--test-round`` and are scored on that round's judged
items, which neither saw: the detector's G-Mean and AUC there, and how far its estimated alpha, beta,
gamma (and Eq. 1's R from them) fall from the ones it actually has on the new round. Writes
``jobs/results/round_detector.md`` and ``.json``; the labels are whatever judged the work directory
(SIMULATED judges for make demo-loop).

    python jobs/compare_round_detector.py --workdir out/demo-loop --test-round 2
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.report.markdown import pipe_table
from jobs.bench_common import command_line, write_results

RATES = ("alpha", "beta", "gamma")


def _ratio(rates: dict) -> float | None:
    from hades_ray.select.ratio import explain_ratio

    return explain_ratio(rates["alpha"], rates["beta"], rates["gamma"]).raw


def compare(config, workdir: Path, test_round: int, output: Path, training: str) -> dict:
    from hades_ray.annotate.labels import consensus_items
    from hades_ray.detect.detector import Detector
    from hades_ray.metrics import binary_metrics
    from hades_ray.select.crossval import crossval_detector, hades_fields
    from hades_ray.select.detector import round_detector_config, split_detector
    from hades_ray.select.ratio import detector_rates

    trained = round_detector_config(copy.deepcopy(config))
    trained.select.detector_training = training
    labeled = consensus_items(config, workdir, list(range(test_round)))
    labels = np.array([r["hallucination"] for r in labeled], dtype=int)
    began = time.perf_counter()
    train = crossval_detector if training == "crossval" else split_detector
    result = train(trained, labeled, labels, output / training, test_round)
    seconds = time.perf_counter() - began
    test = consensus_items(config, workdir, [test_round])
    y = np.array([r["hallucination"] for r in test], dtype=int)
    p, pred = Detector.open(result["model_dir"]).score_records([hades_fields(r) for r in test])
    actual = detector_rates(y, pred)
    estimated = result["rates"]
    return {
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


def markdown(rows: list[dict], command: str) -> str:
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", required=True, help="a work directory with judged rounds (make demo-loop)")
    parser.add_argument("--test-round", type=int, default=2, help="train on the rounds before it, test on it")
    parser.add_argument("--output", default="/tmp/compare_round_detector", help="folder for the trained detectors")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="config override KEY=VALUE")
    args = parser.parse_args(argv)
    from hades_ray.config import load_saved_config, set_dotted, validate

    workdir = Path(args.workdir)
    config = load_saved_config(workdir / f"round-{args.test_round:03d}" / "config.resolved.yaml")
    for assignment in args.overrides:
        set_dotted(config, assignment)
    validate(config)
    rows = [compare(config, workdir, args.test_round, Path(args.output), t) for t in ("split", "crossval")]
    write_results("round_detector", rows, markdown(rows, command_line("compare_round_detector.py", argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
