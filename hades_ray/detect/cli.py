"""``hades-ray train | evaluate | predict | tune``: thin handlers over ``hades_ray.train`` (training, sweeps)
and ``hades_ray.detect.score_job`` (a detector scoring a file)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from hades_ray.cli_common import (
    add_config_args,
    add_detector_arg,
    add_force_arg,
    add_job_args,
    add_key_flags,
    config_from_args,
    executor_from_args,
)
from hades_ray.detect.settings import DETECTORS

TRAIN_HELP = "HaDes JSONL to train on (published files or instances.jsonl)"


def _config(args: argparse.Namespace):
    config = config_from_args(args)
    if getattr(args, "skip_bad", False):
        config.detect.skip_bad = True
    return config


def _train(args: argparse.Namespace) -> int:
    from hades_ray.detect.detector import Detector
    from hades_ray.train.fit import train_detector

    config = _config(args)
    workers = args.workers or config.detect.workers
    mode = args.mode or config.detect.mode
    out = train_detector(config, args.train, args.valid, args.output, args.detector, mode, workers)
    if args.test:
        _evaluate_into(Detector.open(out), args.test, out / "test", config)
    print((out / "metrics.md").read_text(encoding="utf-8"), end="")
    return 0


def _evaluate_into(detector, data: str, out: Path, config=None, executor=None, parts: Path | None = None) -> dict:
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
        return detector, _config(args)
    return detector, detector.config()


def _evaluate(args: argparse.Namespace) -> int:
    detector, config = _scoring(args)
    out = Path(args.output) if args.output else Path(args.model) / "eval" / Path(args.data).stem
    executor = executor_from_args(args, config)
    metrics = _evaluate_into(detector, args.data, out, config, executor, out / "parts")
    print((out / "metrics.md").read_text(encoding="utf-8"), end="")
    print(json.dumps({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in metrics.items()}))
    return 0


def _predict(args: argparse.Namespace) -> int:
    from hades_ray.detect.score_job import predict_file

    detector, config = _scoring(args)
    print(predict_file(detector, args.data, args.output, config, executor_from_args(args, config)))
    return 0


def _tune(args: argparse.Namespace) -> int:
    from hades_ray.train.space import load_space
    from hades_ray.train.tune import tune_detector

    config = config_from_args(args)
    space = load_space(args.space, config.to_dict()) if args.space else None
    summary = tune_detector(
        config,
        args.train,
        args.valid,
        args.output,
        num_samples=args.num_samples,
        space=space,
        resume=args.resume,
        force=args.force,
    )
    print(f"best {summary['metric']}: {summary['best_score']} with {json.dumps(summary['best_config'])}")
    print(f"results: {args.output}/best.json; trials under {summary['experiment']}")
    return 0


def register(subparsers) -> None:
    train = subparsers.add_parser("train", help="train a hallucination detector (transformer, lr or svm)")
    train.add_argument("--train", required=True, help=TRAIN_HELP)
    train.add_argument("--valid", required=True, help="validation file; picks the best epoch")
    train.add_argument("--test", default=None, help="optional test file evaluated with the best model")
    train.add_argument("--output", required=True, help="detector folder to write")
    train.add_argument(
        "--detector",
        choices=DETECTORS,
        default="transformer",
        help="transformer (an encoder and an MLP head, the default), or the paper's feature detectors lr and svm",
    )
    add_key_flags(train, "detect", "mode", "workers", "skip_bad", read=True)
    add_config_args(train)
    train.set_defaults(func=_train)

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

    parser = subparsers.add_parser("tune", help="sweep the detector's configuration with Ray Tune (ASHA)")
    parser.add_argument("--train", required=True, help=TRAIN_HELP)
    parser.add_argument("--valid", required=True, help="validation file; every trial is scored on it")
    parser.add_argument("--output", required=True, help="folder for the sweep (its trials, train_runs/, best.json)")
    parser.add_argument(
        "--num-samples", type=int, default=4, help="configurations sampled from the search space (default 4)"
    )
    parser.add_argument(
        "--space",
        default=None,
        metavar="FILE.yaml",
        help="search space: config keys to {choice|grid_search: [...]} or {uniform|loguniform|randint: [lo, hi]} "
        "(hades_ray/train/space.py; default: the paper's space)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the interrupted sweep in --output (only one this tool created and recorded)",
    )
    add_force_arg(parser, "a finished sweep in --output")
    add_config_args(parser)
    parser.set_defaults(func=_tune)
