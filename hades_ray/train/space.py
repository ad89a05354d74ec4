"""``hades-ray tune --space FILE.yaml``: a sweep's search space written by the user.

Each top-level key is a config key (``detect.pooling``); its value is one of

    detect.pooling: {choice: [mean, max]}          # tune.choice
    detect.mlp_hidden: {grid_search: [64, 128]}    # tune.grid_search (every value, times --num-samples)
    detect.lr: {loguniform: [1.0e-4, 1.0e-2]}      # tune.loguniform(lower, upper)
    detect.lr: {uniform: [1.0e-4, 1.0e-2]}         # tune.uniform(lower, upper)
    detect.window: {randint: [32, 256]}            # tune.randint(lower, upper), upper excluded
    detect.epochs: 3                               # a plain value: fixed in every trial

Every key and every listed value is checked against the config before any trial starts (a value no
preset would pass fails here, naming file, line and key). Without ``--space`` the paper's space
(``tune.default_space``) is swept.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from hades_ray.config import config_from_dict, set_dotted, validate
from hades_ray.errors import UserError

CATEGORICAL = ("choice", "grid_search")
RANGES = ("uniform", "loguniform", "randint")
KINDS = CATEGORICAL + RANGES


class SpaceError(UserError):
    """A search-space file that cannot be swept (the message names file, line and key)."""


def load_space(path: str | Path, base: dict) -> dict:
    """The Tune ``param_space`` of the YAML file ``path``, each entry checked against the config ``base``."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        root = yaml.compose(text)
        data = yaml.safe_load(text)
    except OSError as error:
        raise SpaceError(f"{path}: cannot read the search space ({error.strerror or error})") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise SpaceError(f"{where}: not valid YAML ({getattr(error, 'problem', None) or error})") from None
    if not isinstance(data, dict) or not data:
        raise SpaceError(f"{path}: a search space is a mapping of config keys to domains, e.g. "
                         "'detect.pooling: {choice: [mean, max]}'")  # fmt: skip
    lines = {node.value: node.start_mark.line + 1 for node, _ in root.value} if root is not None else {}
    return {key: _domain(f"{path}:{lines.get(key, 1)}", key, value, base) for key, value in data.items()}


def _domain(where: str, key, value, base: dict):
    from ray import tune

    if not isinstance(key, str) or "." not in key:
        raise SpaceError(f"{where}: key {key!r}: expected a config key such as detect.pooling")
    if not isinstance(value, dict):
        _check_value(where, key, value, base)
        return value
    if len(value) != 1 or next(iter(value)) not in KINDS:
        raise SpaceError(f"{where}: key {key!r}: expected one of {', '.join(KINDS)} (e.g. {{choice: [a, b]}}), "
                         f"got {json.dumps(value, default=str)}")  # fmt: skip
    kind, args = next(iter(value.items()))
    if not isinstance(args, list) or not args:
        raise SpaceError(f"{where}: key {key!r}: {kind} takes a non-empty list, got {args!r}")
    if kind in CATEGORICAL:
        for choice in args:
            _check_value(where, key, choice, base)
        return tune.choice(args) if kind == "choice" else tune.grid_search(args)
    if len(args) != 2 or not all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in args):
        raise SpaceError(f"{where}: key {key!r}: {kind} takes [lower, upper] numbers, got {args!r}")
    lower, upper = args
    if not lower < upper or (kind == "loguniform" and lower <= 0) or not all(map(math.isfinite, args)):
        raise SpaceError(f"{where}: key {key!r}: {kind} needs finite lower < upper (and lower > 0 for loguniform), "
                         f"got {args!r}")  # fmt: skip
    if kind == "randint" and not all(isinstance(a, int) for a in args):
        raise SpaceError(f"{where}: key {key!r}: randint takes integers, got {args!r}")
    for bound in (lower, upper - 1 if kind == "randint" else upper):
        _check_value(where, key, bound, base)
    return getattr(tune, kind)(lower, upper)


def apply_trial(base: dict, trial: dict):
    """The config ``base`` (a dict) with a trial's ``{dotted key: value}`` set, validated."""
    config = config_from_dict(base)
    for key, value in trial.items():
        set_dotted(config, f"{key}={json.dumps(value)}")
    validate(config)  # a search space can reach values no preset would pass
    return config


def _check_value(where: str, key: str, value, base: dict) -> None:
    try:
        apply_trial(base, {key: value})
    except Exception as error:  # noqa: BLE001 - the config's own message, on one line with the file's place
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise SpaceError(f"{where}: key {key!r}: value {value!r}: {message}") from None


def space_values(space: dict, key: str, default) -> list | None:
    """Every value ``key`` can take in ``space`` (``[default]`` when the space leaves it alone); None when a
    range makes them uncountable."""
    from ray.tune.search.sample import Categorical, Domain

    domain = space.get(key, default)
    if isinstance(domain, dict) and "grid_search" in domain:
        return list(domain["grid_search"])
    if isinstance(domain, Categorical):
        return list(domain.categories)
    if isinstance(domain, Domain):
        return None
    return [domain]
