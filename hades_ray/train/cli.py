"""``hades-ray train | tune``: thin handlers over ``hades_ray.train`` (a detector's fit, a Ray Tune sweep of
its configuration); a trained detector's ``--test`` file is scored as ``hades-ray evaluate`` scores one."""

from __future__ import annotations

import argparse
import json

from hades_ray.cli_common import add_config_args, add_force_arg, add_key_flags, config_from_args
from hades_ray.detect.probe import PROBE
from hades_ray.detect.settings import DETECTORS

TRAIN_HELP = "HaDes JSONL to train on (published files or instances.jsonl)"


def _train(args: argparse.Namespace) -> int:
    from hades_ray.detect.cli import detect_config, evaluate_into
    from hades_ray.detect.detector import Detector
    from hades_ray.train.fit import train_detector

    config = detect_config(args)
    workers = args.workers or config.detect.workers
    mode = args.mode or config.detect.mode
    out = train_detector(config, args.train, args.valid, args.output, args.detector, mode, workers)
    if args.test:
        evaluate_into(Detector.open(out), args.test, out / "test", config)
    print((out / "metrics.md").read_text(encoding="utf-8"), end="")
    return 0


def _tune(args: argparse.Namespace) -> int:
    from hades_ray.train.space import load_space
    from hades_ray.train.tune import tune_detector

    config = config_from_args(args)
    space = load_space(args.space, config.to_dict()) if args.space else None
    summary = tune_detector(
        config, args.train, args.valid, args.output, num_samples=args.num_samples, space=space, force=args.force
    )
    print(f"best {summary['metric']}: {summary['best_score']} with {json.dumps(summary['best_config'])}")
    print(f"results: {args.output}/best.json; trials under {summary['experiment']}")
    return 0


def _add_data_args(parser: argparse.ArgumentParser, valid_help: str) -> None:
    parser.add_argument("--train", required=True, help=TRAIN_HELP)
    parser.add_argument("--valid", required=True, help=valid_help)


def register(subparsers) -> None:
    train = subparsers.add_parser("train", help="train a hallucination detector (transformer, probe, lr or svm)")
    _add_data_args(train, "validation file; picks the best epoch")
    train.add_argument("--test", default=None, help="optional test file evaluated with the best model")
    train.add_argument("--output", required=True, help="detector folder to write")
    train.add_argument(
        "--detector",
        choices=(*DETECTORS, PROBE),
        default="transformer",
        help="transformer (an encoder and an MLP head, the default); probe (an online MLP head on a causal "
        "generator's own hidden states, detect.layer's, frozen: generate judges its words with no second "
        "forward; detect.backbone names the generator); or the paper's feature detectors lr and svm",
    )
    add_key_flags(train, "detect", "mode", "workers", "skip_bad", read=True)
    add_config_args(train)
    train.set_defaults(func=_train)

    parser = subparsers.add_parser("tune", help="sweep the detector's configuration with Ray Tune (ASHA)")
    _add_data_args(parser, "validation file; every trial is scored on it")
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
    add_force_arg(parser, "the sweep in --output")
    add_config_args(parser)
    parser.set_defaults(func=_tune)
