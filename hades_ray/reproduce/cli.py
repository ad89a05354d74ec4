"""``hades-ray reproduce tables``: the paper's Tables 2-3 grid as one Ray Tune experiment."""

from __future__ import annotations

import argparse
import sys

from hades_ray.cli_common import add_config_args, add_force_arg, add_key_flags, config_from_args
from hades_ray.errors import UserError


def _tables(args: argparse.Namespace) -> int:
    from hades_ray.reproduce.run import cost_text, prepare, reproduce_tables

    config = config_from_args(args)
    if args.cost_only:
        grid, cells, dataset = prepare(config, args.dataset)
        print(f"grid {grid.path} on {dataset}: {len(cells)} trials\n" + cost_text(config, grid, cells, dataset))
        return 0
    if not args.output:
        raise UserError("--output is required (only --cost-only runs without one)")
    result = reproduce_tables(config, args.dataset, args.output, force=args.force)
    print(result["markdown"], end="")
    print(f"grid wall time {result['wall_seconds']:.0f} s; tables: {args.output}/tables.md and tables.json")
    if result["failed"]:
        print(
            f"hades-ray reproduce tables: {len(result['failed'])} trial(s) failed ({', '.join(result['failed'])}); "
            "their rows are empty. Rerun the same command to run them again (finished cells are kept)",
            file=sys.stderr,
        )
        return 1
    return 0


def register(subparsers) -> None:
    from hades_ray.reproduce.study_cli import register_studies

    parser = subparsers.add_parser(
        "reproduce", help="the paper's experiments (Tables 2-3, Fig. 6, the decoding study) as commands"
    )
    commands = parser.add_subparsers(dest="experiment", metavar="EXPERIMENT", required=True)
    tables = commands.add_parser(
        "tables",
        help="train and test LR, SVM and the four transformer backbones (GPT-2 online only), as one Ray Tune "
        "experiment; write Tables 2-3 beside the paper's figures",
        description=__doc__,
    )
    tables.add_argument(
        "--dataset", required=True, help="a HaDes-format folder: train.txt, valid.txt, test.txt (Wiki-Hades or "
        "`hades-ray dataset build` output)"
    )  # fmt: skip
    tables.add_argument(
        "--output", help="folder for the experiment, cells/ and tables.md/.json (required unless --cost-only)"
    )
    add_force_arg(tables, "every cell of the grid in --output")
    tables.add_argument("--cost-only", action="store_true", help="print the grid's cost and stop (no training)")
    add_key_flags(tables, "reproduce", "grid", "rows", "modes")
    add_key_flags(tables, "detect", "epochs")
    add_key_flags(tables, "reproduce", "labels")
    add_config_args(tables)
    tables.set_defaults(func=_tables)
    register_studies(commands)
