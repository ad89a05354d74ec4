"""Arguments every command shares: the preset, a YAML config file and ``--set key=value`` overrides."""

from __future__ import annotations

import argparse
import json
import logging

from hades_ray.config import HadesConfig, load_config


def number_in(kind, low: float, high: float, low_open: bool = False):
    """An argparse type: a ``kind`` (int or float) in ``[low, high]`` (``(low, high]`` when ``low_open``),
    so a bad flag is argparse's one-line usage error, never a traceback further in."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {kind.__name__}, got {text!r}") from None
        if not ((value > low) if low_open else (value >= low)) or not value <= high or value != value:
            left = "(" if low_open else "["
            raise argparse.ArgumentTypeError(f"{text} is not in {left}{low:g}, {high:g}]")
        return value

    return parse


POSITIVE_INT = number_in(int, 1, 2**31)
PROBABILITY = number_in(float, 0.0, 1.0)
GPU_SHARE = number_in(float, 0.0, 64.0)
EXECUTORS = ("ray", "local")  # hades_ray/pipeline/executor.py


class _Override(argparse.Action):
    """A flag that is a shorthand for ``--set KEY=VALUE``: it joins ``--set``'s list in command-line order,
    so the config section stays the one place that holds the value and its default."""

    def __init__(self, option_strings, dest, key: str, **kwargs):
        self.key = key
        super().__init__(option_strings, dest="overrides", default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        value = self.const if self.nargs == 0 else values
        overrides = [*getattr(namespace, "overrides", []), f"{self.key}={json.dumps(value)}"]
        namespace.overrides = overrides


def add_override(parser: argparse.ArgumentParser, flag: str, key: str, help: str, **kwargs) -> None:
    """``flag VALUE`` sets config ``key`` (``type``/``choices`` check it first, as for any flag); give
    ``switch=True`` for an on/off flag that sets true."""
    if kwargs.pop("switch", False):
        kwargs |= {"nargs": 0, "const": True}
    elif "choices" not in kwargs:
        kwargs.setdefault("metavar", key.rsplit(".", 1)[-1].upper())
    shown = "true" if kwargs.get("nargs") == 0 else "..."
    parser.add_argument(flag, action=_Override, key=key, help=f"{help} (= --set {key}={shown})", **kwargs)


def add_config_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--preset",
        choices=("local", "paper"),
        default=None,
        help="model and resource preset (default: local, or the config file's preset)",
    )
    parser.add_argument(
        "--config", dest="config_file", default=None, metavar="FILE.yaml", help="YAML file overriding the preset"
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one config value, e.g. --set perturb.mask.ratio=0.2 (repeatable)",
    )
    parser.add_argument("--seed", type=int, default=None, help="random seed (same as --set seed=S)")


def add_job_args(
    parser: argparse.ArgumentParser, output_help: str | None, executors: tuple[str, ...] = EXECUTORS
) -> None:
    """The flags of every sharded job (hades_ray/pipeline/executor.py runs them all): where its output
    goes (``output_help`` None: the command names its folders otherwise, e.g. ``--workdir``), which
    executor runs it, and whether finished shards are redone."""
    if output_help is not None:
        parser.add_argument("--output", required=True, help=output_help)
    parser.add_argument(
        "--executor",
        choices=executors,
        default=executors[0],
        help="ray: Ray Data actor pools (RAY_ADDRESS, or a private local cluster on 127.0.0.1); local: "
        "the same stages in this process, serially"
        + ("; auto: local for --text and stdin, ray for files" if "auto" in executors else ""),
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="redo finished shards (a shard made from other input or settings otherwise stops the run)",
    )


def executor_from_args(args: argparse.Namespace, config: HadesConfig, kind: str | None = None):
    """The ``Executor`` a command's ``--executor``/``--force`` and the config's ``ray`` section ask for."""
    from hades_ray.pipeline.executor import Executor

    return Executor.of(config.ray, kind or args.executor, args.force)


def config_from_args(args: argparse.Namespace) -> HadesConfig:
    overrides = list(args.overrides)
    if getattr(args, "seed", None) is not None:
        overrides.append(f"seed={args.seed}")
    return load_config(args.preset, args.config_file, overrides)


def setup_logging(verbose: bool = False) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
