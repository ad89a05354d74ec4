"""The ``hades-ray`` command line: one subcommand per job, each with ``--help``."""

from __future__ import annotations

import argparse
import importlib
import sys

from hades_ray.cli_common import setup_logging
from hades_ray.errors import UserError
from hades_ray.io.readers import InputError
from hades_ray.pipeline.errors import OutputLockedError, ResourceError, StoreError

# Each module defines ``register(subparsers)``; a command's handler returns an exit code.
COMMAND_MODULES = (
    "hades_ray.models.cli",
    "hades_ray.perturb.cli",
    "hades_ray.train.cli",
    "hades_ray.detect.cli",
    "hades_ray.select.cli",
    "hades_ray.annotate.cli",
    "hades_ray.score.cli",
    "hades_ray.serve.cli",
    "hades_ray.guard.cli",
    "hades_ray.report.cli",
    "hades_ray.plan.cli",
    "hades_ray.text.cli",
    "hades_ray.reproduce.cli",
)

# Input errors end the command with their one-line message and exit code 2, never a traceback.
# UserError covers config keys and files, HaDes lines, judges' files, model references and checkpoints.
USER_ERRORS = (
    UserError,
    FileNotFoundError,
    FileExistsError,
    PermissionError,
    IsADirectoryError,
    NotADirectoryError,
    InputError,
    ResourceError,
    OutputLockedError,
    StoreError,  # a full disk, a store failing through every retry: finished shards are kept
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hades-ray",
        description="HaDes token-level hallucination-detection data and detectors on Ray.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    # Every command module is part of the package and imports only the standard library and the project
    # (heavy libraries load inside the handlers), so a module that fails to import is a bug to show,
    # never a command to leave out in silence.
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
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
    except KeyboardInterrupt:
        print(f"hades-ray {args.command}: interrupted; finished parts are kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
