"""``hades-ray report``: the pool, the rounds, the dataset, detectors and the analyses as one page."""

from __future__ import annotations

import argparse
import inspect

from hades_ray.cli_common import POSITIVE_INT, add_key_flag
from hades_ray.config import HadesConfig
from hades_ray.errors import UserError
from hades_ray.report.build import MAX_DOCS


def add_report_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pool", required=True, help="a finished `hades-ray perturb --output` folder (summary.json, pool/)"
    )
    parser.add_argument("--workdir", default=None, help="a selection work directory (round-NNN/round.json, judgments)")
    parser.add_argument(
        "--dataset", default=None, help="a `hades-ray dataset build` folder (train/valid/test.txt, stats.json)"
    )
    parser.add_argument(
        "--detector",
        dest="detectors",
        action="append",
        default=[],
        metavar="[NAME=]PATH",
        help="a detector folder (scored on --dataset's --split) or a `hades-ray predict` JSONL with labels; "
        "repeat to compare detectors on the same instances",
    )
    parser.add_argument(
        "--analyses",
        default=None,
        metavar="FILE",
        help="analyses.json from `hades-ray reproduce context` and `reproduce decoding` (context length and "
        "decoding sections; `make report` uses out/analyses/analyses.json)",
    )
    parser.add_argument(
        "--tables", default=None, metavar="DIR", help="a `hades-ray reproduce tables --output` folder (Tables 2-3)"
    )
    parser.add_argument(
        "--split",
        default="test",
        choices=("train", "valid", "test", "all"),
        help="dataset split that detector folders are scored on (all: the three together)",
    )
    parser.add_argument(
        "--min-round",
        type=int,
        default=0,
        metavar="K",
        help="score detector folders only on items judged in round K or later (a round-K detector never saw them)",
    )
    parser.add_argument(
        "--feature-limit",
        type=int,
        default=300,
        help="labelled instances (a seeded sample) for the features-by-label section; the MLM runs on each",
    )
    parser.add_argument(
        "--max-docs",
        type=POSITIVE_INT,
        default=MAX_DOCS,
        help="pool documents read for the size and perplexity distributions and the learnability labels "
        "(the first ones, in part order; the counts and the artifact rate come from summary.json and cover all)",
    )
    add_key_flag(parser, "seed", read=True)  # the samples' and the bootstrap's
    parser.add_argument("--output", required=True, help="folder for report.html, report.md, report.json and figures/")


def run(args: argparse.Namespace) -> int:
    from hades_ray.report.build import build_report

    if args.feature_limit < 2:
        raise UserError("--feature-limit must be >= 2")
    if args.seed is None:  # the one --seed flag reads as the config's seed, whose default applies here
        args.seed = HadesConfig().seed
    # Each of build_report's options is the flag of the same name.
    options = [name for name in inspect.signature(build_report).parameters if name != "output"]
    result = build_report(args.output, **{name: getattr(args, name) for name in options})
    print(f"sections: {', '.join(result['sections'])}")
    for kind, path in result["paths"].items():
        print(f"{kind}: {path}")
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "report", help="an HTML/Markdown/JSON report of the pool, rounds, dataset, detectors and analyses",
        description=__doc__,
    )  # fmt: skip
    add_report_args(parser)
    parser.set_defaults(func=run)
