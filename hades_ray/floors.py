"""The floors of the package, lowest first: a module imports only from its own floor or below.

Each entry names a package or a module of ``hades_ray`` (``"io"``, ``"config"``), or a pattern
(``"*.cli"``: every package's command wiring). A module belongs to the entry that names it most
closely (``select.cli`` matches ``*.cli`` before ``select``). Entries on one floor may import each
other, one way only: tests/test_layering.py walks every import of ``hades_ray`` (function-level ones
too) and fails on an upward import, on a cycle between modules or between entries, on a module no
entry claims, and on a private name (``_x``) imported from another package.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

FLOORS: tuple[tuple[str, ...], ...] = (
    # Foundations: no imports from the package; ``__init__`` is ``hades_ray/__init__.py`` and this file;
    # ``markdown``: the one writer of Markdown tables (metrics, reports, jobs/results pages).
    ("__init__", "floors", "errors", "config_keys", "text", "markdown"),
    # Every package's config section (its ``settings.py``): plain dataclasses and their checks, so that
    # building a config imports no model or data library.
    ("*.settings",),
    # Generic machinery: paths and storage, shards, stages, the executor; joining Ray; metrics.
    ("pipeline", "ray_runtime", "metrics"),
    # Formats on disk: inputs, HaDes files, CSV.
    ("io",),
    # The model registry and the offline kit.
    ("models",),
    # The one config over those sections: load, merge, coerce, presets, the resolved YAML.
    ("config",),
    # The work folder: its layout, the pool's schemas and readers, the pool's features and the consensus labels
    # (what the perturbation job writes, detectors read, and rounds and the judges' commands share).
    ("pool",),
    # The two engines over text: perturbation, and detectors (which reuse perturb's span bookkeeping).
    ("perturb", "detect"),
    # Jobs built on detectors: training and sweeps, scoring, guarded generation, judges' files, selection
    # rounds, the service.
    ("train", "score", "guard", "annotate", "select", "serve"),
    # Reading results: cost plans and the analyses page.
    ("plan", "report"),
    # The paper's experiments over all of them (they read the report's statistics; the report reads their files).
    ("reproduce",),
    # The Python API (``from hades_ray import Detector, guarded_generate``): objects over the jobs' own code.
    ("api",),
    # Command wiring: the entry point, shared flags, every package's ``cli.py``.
    ("cli", "cli_common", "__main__", "*.cli", "reproduce.study_cli"),
)


def _matches(entry: str, name: str) -> bool:
    if "*" in entry:
        return fnmatchcase(name, entry)
    return name == entry or name.startswith(entry + ".")


def _closeness(entry: str) -> tuple[int, bool]:
    # More dotted parts name a module more closely (``*.cli`` before ``select``); a name before a pattern.
    return (entry.count("."), "*" not in entry)


def unit_of(module: str) -> str | None:
    """The floor entry that claims ``module`` (dotted, without the leading ``hades_ray.``), or None."""
    name = module or "__init__"
    entries = [e for floor in FLOORS for e in floor if _matches(e, name)]
    return max(entries, key=_closeness) if entries else None


def floor_of(unit: str) -> int:
    """The floor index of an entry (0 is the lowest)."""
    return next(i for i, floor in enumerate(FLOORS) if unit in floor)
