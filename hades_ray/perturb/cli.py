"""``hades-ray perturb``: raw Wikipedia text to a pool of perturbed texts and HaDes instances."""

from __future__ import annotations

import argparse

from hades_ray.cli_common import add_config_args, add_job_args, add_key_flag, config_from_args, executor_from_args
from hades_ray.errors import UserError
from hades_ray.io.demo_corpus import DEMO_INPUT
from hades_ray.perturb.console import print_summary


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "perturb", help="MASK -> REPLACE -> RANK raw text into a perturbed pool", description=__doc__
    )
    parser.add_argument(
        "--input",
        required=True,
        help=f"JSONL or Parquet file or folder (id, text[, title]; Wiki-40B Parquet too), "
        f"or '{DEMO_INPUT}' for the embedded Wikipedia leads; with --language auto, a folder of Wiki-40B "
        "language folders (de/, zh-cn/, ...) is one run per language into OUTPUT/LANG",
    )
    add_job_args(parser, "output folder or URI such as s3://bucket/pool (pool/, instances/, _markers/, summary.json)")
    parser.add_argument("--limit", type=int, default=None, help="read at most N input rows (lines for JSONL)")
    parser.add_argument(
        "--sample",
        type=int,
        default=None,
        metavar="N",
        help="a seeded random sample of about N input rows (the seed is --seed / the config's seed)",
    )
    parser.add_argument("--examples", type=int, default=3, help="perturbed examples to print at the end")
    add_config_args(parser)
    add_key_flag(parser, "language")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import dataclasses

    from hades_ray.perturb.runner import language_runs, run_perturb

    config = config_from_args(args, resolve=False)
    for flag in ("limit", "sample"):
        if getattr(args, flag) is not None and getattr(args, flag) < 1:
            raise UserError(f"--{flag} must be >= 1")
    executor = executor_from_args(args, config)
    for language, source, output in language_runs(args.input, args.output, config.language):
        run_config = dataclasses.replace(config, language=language)
        summary = run_perturb(run_config, source, output, args.limit, args.sample, executor)
        print_summary(output, summary, examples=args.examples, models=run_config.models)
    return 0
