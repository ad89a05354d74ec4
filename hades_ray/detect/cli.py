"""``hades-ray evaluate | predict``: thin handlers over ``hades_ray.detect.score_job`` (a detector scoring a
file); ``train`` and ``tune`` are ``hades_ray/train/cli.py``'s."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from hades_ray.cli_common import (
    add_config_args,
    add_detector_arg,
    add_job_args,
    add_key_flags,
    config_from_args,
    executor_from_args,
)


def detect_config(args: argparse.Namespace):
    """The command's config, with ``--skip-bad`` (read, not an override) set in its ``detect`` section."""
    config = config_from_args(args)
    if getattr(args, "skip_bad", False):
        config.detect.skip_bad = True
    return config


def evaluate_into(detector, data: str, out: Path, config=None, executor=None, parts: Path | None = None) -> dict:
    """``evaluate``'s metrics of ``detector`` on a labelled file, written to ``out`` (``train --test`` too)."""
    from hades_ray.detect.score_job import evaluate_file
    from hades_ray.metrics import write_metrics

    metrics = evaluate_file(detector, data, config, executor, parts)
    write_metrics(metrics, out, name=detector.folder.name)
    return metrics


def _scoring(args: argparse.Namespace):
    """The detector, and the flags over the preset or (none given) the config the detector trained with."""
    from hades_ray.detect.detector import Detector

    detector = Detector.open(args.model)
    if args.overrides or args.config_file or args.preset or args.skip_bad:
        return detector, detect_config(args)
    return detector, detector.config()


def _evaluate(args: argparse.Namespace) -> int:
    detector, config = _scoring(args)
    out = Path(args.output) if args.output else Path(args.model) / "eval" / Path(args.data).stem
    executor = executor_from_args(args, config)
    metrics = evaluate_into(detector, args.data, out, config, executor, out / "parts")
    print((out / "metrics.md").read_text(encoding="utf-8"), end="")
    print(json.dumps({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in metrics.items()}))
    return 0


def _predict(args: argparse.Namespace) -> int:
    from hades_ray.detect.score_job import predict_file

    detector, config = _scoring(args)
    print(predict_file(detector, args.data, args.output, config, executor_from_args(args, config)))
    return 0


def register(subparsers) -> None:
    evaluate = subparsers.add_parser("evaluate", help="the paper's metrics of a detector on a labelled file")
    add_detector_arg(evaluate)
    evaluate.add_argument("--data", required=True, help="labelled HaDes JSONL to score")
    evaluate.add_argument("--output", default=None, help="folder for metrics.json/.md (default: MODEL/eval/NAME)")
    add_key_flags(evaluate, "detect", "skip_bad", read=True)
    add_job_args(evaluate, None)  # its shard parts live in OUTPUT/parts/ while it runs
    add_config_args(evaluate)
    evaluate.set_defaults(func=_evaluate)

    predict = subparsers.add_parser("predict", help="add p_hallucination and pred to every instance")
    add_detector_arg(predict)
    predict.add_argument("--data", required=True, help="HaDes JSONL whose instances to score")
    add_job_args(predict, "JSONL to write (its shard parts live in OUTPUT.parts/ until it is written)")
    add_key_flags(predict, "detect", "skip_bad", read=True)
    add_config_args(predict)
    predict.set_defaults(func=_predict)
