"""A config key is declared once: the dataclass field of its section (``X/settings.py``) made by ``key``,
which holds its type (the field's), default, the interval or the values it allows, and its help line.
``coerce`` reads a value as that type and ``check`` holds every value of a config to its declaration, on
every path that builds one; ``hades_ray/cli_common.py`` makes a command's flags from the same fields.

Intervals use the usual notation: ``[`` and ``]`` include the end, ``(`` and ``)`` exclude it. A
list-valued key holds each item to it, and every float must be finite (YAML reads ``.inf`` and ``.nan``
as floats).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
import types
import typing
from typing import Any

import yaml

from hades_ray.errors import ConfigError

_INTERVAL = re.compile(r"^([\[(])\s*(-?[0-9.e+]+)\s*,\s*(-?[0-9.e+]+)\s*([\])])$")
BIG = "1000000000"  # the upper end of counts with no natural limit
INT32 = "2147483648"  # 2**31


def key(default: Any, interval: str = "", *, choices: tuple = (), null: str = "", help: str = "") -> Any:
    """The field that declares a config key: ``interval`` bounds a number (``"(0, 1]"``), ``choices`` are
    the values it takes (besides the numbers of ``interval``, when both are given), ``null`` what None
    (not set) means, ``help`` the help line of the flags that set it."""
    if interval and not _INTERVAL.match(interval):
        raise ValueError(f"not an interval: {interval!r}")
    metadata = {"interval": interval, "choices": tuple(choices), "null": null, "help": help}
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda: copy.deepcopy(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def coerce(value: Any, hint: Any, key: str) -> Any:
    """``value`` (from YAML or ``--set``) as the type ``hint`` declares, or a ConfigError naming ``key``."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):  # ``X | None``: null (or none, ~, empty) means "not set"
        if value is None or (isinstance(value, str) and value.strip().lower() in ("", "null", "none", "~")):
            return None
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        for option in inner[:-1]:  # ``int | str``: the first type the value reads as
            try:
                return coerce(value, option, key)
            except ConfigError:
                pass
        return coerce(value, inner[-1], key)
    if hint is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    if hint is int:
        if isinstance(value, bool):
            raise ConfigError(f"{key}: expected an integer, got {value!r}")
        try:
            as_float = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{key}: expected an integer, got {value!r}") from None
        if not as_float.is_integer():
            raise ConfigError(f"{key}: expected an integer, got {value!r}")
        return int(as_float)
    if hint is float:
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{key}: expected a number, got {value!r}") from None
    if hint is str:
        if isinstance(value, (dict, list)):
            raise ConfigError(f"{key}: expected a string, got {value!r}")
        return str(value)
    if origin in (list, tuple):
        if isinstance(value, str):
            value = yaml.safe_load(value)
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{key}: expected a list, got {value!r}")
        (item_hint, *_) = typing.get_args(hint) or (Any,)
        return [coerce(item, item_hint, f"{key}[{i}]") for i, item in enumerate(value)]
    if origin is dict or hint is dict:
        if isinstance(value, str):
            value = yaml.safe_load(value)
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping, got {value!r}")
        key_hint, item_hint = typing.get_args(hint) or (Any, Any)
        return {coerce(k, key_hint, key): coerce(v, item_hint, f"{key}.{k}") for k, v in value.items()}
    return value


def in_interval(value: float, interval: str) -> bool:
    opening, low, high, closing = _INTERVAL.match(interval).groups()
    low_ok = value >= float(low) if opening == "[" else value > float(low)
    high_ok = value <= float(high) if closing == "]" else value < float(high)
    return low_ok and high_ok


def words(choices: tuple) -> str:
    """``a, b or c``."""
    shown = [str(c) for c in choices]
    return " or ".join(filter(None, [", ".join(shown[:-1]), shown[-1]]))


def problem(name: str, value: Any, declared: dict) -> str:
    """What is wrong with one value (one item of a list) of a key ("" when nothing is)."""
    interval, choices = declared.get("interval"), declared.get("choices")
    if value is None or value in (choices or ()) or not (interval or choices):
        return ""
    if not interval:
        return f"{name}: {words(choices)}" + (f" (or null: {declared['null']})" if declared["null"] else "")
    besides = f" (or {words(choices)})" if choices else ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{name}: expected a number, got {value!r}{besides}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{name} must be a finite number, got {value!r}{besides}"
    if not in_interval(value, interval):
        return f"{name} must be in {interval}, got {value!r}{besides}"
    return ""


def check(section: Any, prefix: str = "") -> None:
    """Raise a ConfigError for the first value under ``section`` (a config dataclass) that its key's
    declaration does not allow."""
    for item in dataclasses.fields(section):
        value, name = getattr(section, item.name), prefix + item.name
        if dataclasses.is_dataclass(value):
            check(value, f"{name}.")
            continue
        items = enumerate(value) if isinstance(value, list) else [(None, value)]
        for index, one in items:
            message = problem(name if index is None else f"{name}[{index}]", one, item.metadata)
            if message:
                raise ConfigError(message)


def require(*checks: tuple[bool, str]) -> None:
    """A section's rules between keys: raise the message of the first ``(ok, message)`` that fails."""
    for ok, message in checks:
        if not ok:
            raise ConfigError(message)
