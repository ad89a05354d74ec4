"""``hades-ray round | tune-selection``."""

from __future__ import annotations

import argparse
import json

from hades_ray.cli_common import (
    add_config_args,
    add_force_arg,
    add_job_args,
    add_round_args,
    config_from_args,
    executor_from_args,
)


def print_round(summary: dict) -> None:
    counts = summary["counts"]
    print(f"round {summary['round']}: " + ", ".join(f"{k}={v}" for k, v in counts.items()))
    for key in ("thresholds", "rates", "ratio"):
        if key in summary:
            print(f"  {key}: {json.dumps(summary[key], default=str)}")
    for message in summary.get("messages", []):
        print(f"  note: {message}")


def _round(args) -> int:
    from hades_ray.select.round import run_round

    config = config_from_args(args)
    executor = executor_from_args(args, config)
    summary = run_round(config, args.workdir, args.round, pool=args.pool, executor=executor)
    print_round(summary)
    return 0


def _tune_selection(args) -> int:
    from hades_ray.select.tune_selection import tune_selection

    report = tune_selection(config_from_args(args), args.workdir, args.round, force=args.force)
    print(f"round {args.round}: best cuts {json.dumps(report['best'])} -> {json.dumps(report['best_metrics'])}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("round", help="select one round's batch for judges (model in the loop)")
    add_round_args(parser, "round number: 0 is random, >= 1 uses a detector")
    parser.add_argument(
        "--pool", default=None, help="the perturbation job's output folder or URI, e.g. s3://... (default WORKDIR/pool)"
    )
    add_job_args(parser, None)  # --executor, --force (features, scores and candidates: hades_ray/select/round.py)
    add_config_args(parser)
    parser.set_defaults(func=_round)

    parser = subparsers.add_parser("tune-selection", help="sweep a round's p(H) and similarity cuts over stored scores")
    add_round_args(parser, "round whose stored scores are swept")
    add_force_arg(parser, "a finished sweep of the round")
    add_config_args(parser)
    parser.set_defaults(func=_tune_selection)
