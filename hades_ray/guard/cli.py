"""``hades-ray generate``: sample continuations of prompts with a causal LM, optionally guarded by an
online detector that resamples each word it flags (up to ``--max-retries`` times)."""

from __future__ import annotations

import argparse
import json

from hades_ray.cli_common import (
    add_config_args,
    add_job_args,
    add_key_flag,
    add_key_flags,
    config_from_args,
    executor_from_args,
)
from hades_ray.errors import UserError
from hades_ray.guard.settings import GuardConfig


def add_generate_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prompts", required=True, help='JSONL file, one {"prompt": "...", "id": "..."} per line')
    add_job_args(
        parser, "output folder or URI (generations.jsonl, interventions.jsonl, quarantine.jsonl, summary.json)"
    )
    add_key_flag(parser, "models.causal_lm", "--model", read=True)
    parser.add_argument(
        "--guard",
        default=None,
        metavar="DETECTOR",
        help="online detector folder, or http://HOST:PORT of `hades-ray serve` (bearer token: $HADES_SERVE_TOKEN): "
        "turns the guard on",
    )
    add_key_flags(parser, "guard")  # a flag for every key of the section
    # Read here, not a --set: given, it wins over the detector's language (the config's default en does not).
    add_key_flag(parser, "language", read=True)
    add_config_args(parser)


def _check(args: argparse.Namespace, settings: GuardConfig) -> None:
    """What needs a detector; every value's own range is its key's (guard/settings.py)."""
    if not args.guard and settings.threshold is not None:
        raise UserError("--threshold needs --guard DETECTOR")
    if not args.guard and settings.html:
        raise UserError("--html shades words by the guard's p(H): it needs --guard DETECTOR")


def run(args: argparse.Namespace) -> int:
    from hades_ray.guard.runner import guard_job, run_generate

    config = config_from_args(args, resolve=False)
    _check(args, config.guard)
    config, job, _ = guard_job(config, args.model, args.guard, args.language, args.prompts)
    summary = run_generate(job, args.prompts, args.output, config, executor_from_args(args, config))
    print(json.dumps(summary, indent=2))
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "generate",
        help="sample continuations of prompts, optionally guarded by an online detector",
        description=__doc__,
    )
    add_generate_args(parser)
    parser.set_defaults(func=run)
