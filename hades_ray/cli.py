"""The ``hades-ray`` command line: one subcommand per job, each with ``--help``."""

from __future__ import annotations

import argparse
import importlib
import sys

from hades_ray.cli_common import setup_logging
from hades_ray.config import ConfigError
from hades_ray.io.hades_format import HadesFormatError
from hades_ray.io.readers import InputError
from hades_ray.models.registry import ModelNotFoundError
from hades_ray.pipeline.errors import OutputLockedError, ResourceError

# Each module defines ``register(subparsers)``; a command's handler returns an exit code.
COMMAND_MODULES = (
    "hades_ray.models.cli",
    "hades_ray.perturb.cli",
    "hades_ray.detect.cli",
    "hades_ray.select.cli",
    "hades_ray.annotate.cli",
)

USER_ERRORS = (
    ConfigError,
    HadesFormatError,
    ModelNotFoundError,
    FileNotFoundError,
    FileExistsError,
    InputError,
    ResourceError,
    OutputLockedError,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hades-ray",
        description="HaDes token-level hallucination-detection data and detectors on Ray.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name and name.startswith(error.name):
                continue  # a stage not present in this build
            raise
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    setup_logging(args.verbose)
    try:
        return int(args.func(args) or 0)
    except USER_ERRORS as error:
        print(f"hades-ray {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
