"""Arguments every command shares (the preset, a YAML config file and ``--set key=value`` overrides, a sharded
job's output and executor), and the flags made from config keys' declarations."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import typing

from hades_ray.config import PRESETS, HadesConfig, key_field, load_config, resolve_language
from hades_ray.text.languages import AUTO, language_from_path


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
EXECUTORS = ("ray", "local")  # hades_ray/pipeline/executor.py
WORKDIR_HELP = "the work directory (a local folder): pool, rounds, judgments"


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


def add_key_flag(parser: argparse.ArgumentParser, key: str, flag: str = "", read: bool = False) -> None:
    """The flag of config ``key`` (``--`` and its last part, or ``flag``), made from the key's declaration:
    its type, choices and help line. It is ``--set KEY=VALUE`` in short (an on/off flag for a boolean key),
    joining ``--set``'s list in command-line order; with ``read``, a plain flag (default None, or off)
    that the command reads itself."""
    hint, declared = key_field(key)
    meta = declared.metadata
    flag = flag or "--" + key.rsplit(".", 1)[-1].replace("_", "-")
    listed = typing.get_origin(hint) is list  # given as YAML text, such as [5,80]; its items are checked later
    kind = str if listed else next((t for t in (bool, int, float) if hint is t or t in typing.get_args(hint)), str)
    if not meta.get("help"):
        raise ValueError(f"config key {key} declares no help line for its flag (config_keys.key)")
    help = meta["help"] + (f" (default: {meta['null']})" if meta["null"] else "")
    scalar = meta.get("choices") and not meta["interval"] and not listed
    options = {"choices": meta["choices"]} if scalar else {}
    if read:
        options |= {"action": "store_true"} if kind is bool else {"type": kind, "default": None}
        help += "" if kind is bool else f" (default: the config's {key})"
    elif kind is bool:
        options |= {"action": _Override, "key": key, "nargs": 0, "const": True}
        help += f" (= --set {key}=true)"
    else:
        metavar = {} if "choices" in options else {"metavar": key.rsplit(".", 1)[-1].upper()}
        options |= {"action": _Override, "key": key, "type": kind, **metavar}
        help += f" (= --set {key}=...)"
    parser.add_argument(flag, help=help, **options).key = key  # the declaration it was made from


def add_key_flags(parser: argparse.ArgumentParser, section: str, *names: str, read: bool = False) -> None:
    """``add_key_flag`` for the keys ``section.NAME`` of each name; no names: every key of the section."""
    for name in names or [item.name for item in dataclasses.fields(key_field(section)[0])]:
        add_key_flag(parser, f"{section}.{name}", read=read)


def add_config_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--preset",
        choices=PRESETS,
        default=None,
        help="model and resource preset (default: local, or the config file's preset)",
    )
    parser.add_argument(
        "--config", dest="config_file", default=None, metavar="FILE.yaml", help="YAML file overriding the preset"
    )
    add_set_arg(parser)
    add_key_flag(parser, "seed", read=True)


def add_set_arg(parser: argparse.ArgumentParser, help: str = "override one config value") -> None:
    """``--set KEY=VALUE`` (repeatable), on its own for a command whose base config is an output's
    ``config.resolved.yaml`` rather than a preset."""
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"{help}, e.g. --set perturb.mask.ratio=0.2 (repeatable)",
    )


def add_detector_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="detector folder written by `hades-ray train`")


def add_workdir_arg(parser: argparse.ArgumentParser) -> None:
    """``--workdir``: a selection work directory the command reads or writes."""
    parser.add_argument("--workdir", required=True, help=WORKDIR_HELP)


def add_round_args(parser: argparse.ArgumentParser, round_help: str = "round number (0, 1, ...)") -> None:
    """``--workdir`` and ``--round``: one round of a selection work directory."""
    add_workdir_arg(parser)
    parser.add_argument("--round", type=int, required=True, help=round_help)


def add_job_args(
    parser: argparse.ArgumentParser, output_help: str | None, executors: tuple[str, ...] = EXECUTORS
) -> None:
    """The flags of every sharded job (hades_ray/pipeline/executor.py runs them all): where its output
    goes (``output_help`` None: the command names its folders otherwise, e.g. ``--workdir``), which
    executor runs it, and whether finished shards are redone."""
    if output_help is not None:
        parser.add_argument("--output", required=True, help=output_help)
    add_executor_arg(parser, executors)
    add_force_arg(parser)


def add_executor_arg(parser: argparse.ArgumentParser, executors: tuple[str, ...] = EXECUTORS, help: str = "") -> None:
    """``--executor``: which executor runs the command's stages (``help``: what each choice does there)."""
    parser.add_argument(
        "--executor",
        choices=executors,
        default=executors[0],
        help=help
        or "ray: Ray Data actor pools (RAY_ADDRESS, or a private local cluster on 127.0.0.1); local: "
        "the same stages in this process, serially"
        + ("; auto: local for --text and stdin, ray for files" if "auto" in executors else ""),
    )


def add_force_arg(parser: argparse.ArgumentParser, what: str = "finished shards") -> None:
    """``--force``, for sharded jobs and for steps alike (hades_ray/pipeline/steps.py): the one skip policy."""
    parser.add_argument(
        "--force",
        action="store_true",
        help=f"redo {what} (one made from other input or settings otherwise stops the run)",
    )


def executor_from_args(args: argparse.Namespace, config: HadesConfig, kind: str | None = None):
    """The ``Executor`` a command's ``--executor``/``--force`` and the config's ``ray`` section ask for."""
    from hades_ray.pipeline.executor import Executor

    return Executor.of(config.ray, kind or args.executor, args.force)


# The arguments whose path may name the language of a run with ``--language auto`` (wiki40b/de/...).
LANGUAGE_PATHS = ("input", "pool", "workdir", "dataset", "output")


def config_from_args(args: argparse.Namespace, resolve: bool = True) -> HadesConfig:
    """The command's config: preset, file and overrides, then its language's (``config.resolve_language``).
    ``--language auto`` takes the language the first of the command's paths names; where none does it stays
    auto. A command that settles each run's language itself (per language folder, per detector, per request:
    perturb, plan, score, serve, generate) passes ``resolve=False`` and keeps every ``languages.LANG``."""
    overrides = list(args.overrides)
    if getattr(args, "seed", None) is not None:
        overrides.append(f"seed={args.seed}")
    config = load_config(args.preset, args.config_file, overrides)
    if not resolve:
        return config
    paths = [str(getattr(args, name)) for name in LANGUAGE_PATHS if getattr(args, name, None)]
    named = next((path for path in paths if language_from_path(path)), None)
    return config if config.language == AUTO and named is None else resolve_language(config, named)


def setup_logging(verbose: bool = False) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
