"""The grid of Tables 2-3: rows (a detector, its backbone and pinned revision) read from a YAML file,
and the cells (row, mode) that become the Tune experiment's trials.

The file is ``hades_ray/presets/tables_<preset>.yaml`` unless ``reproduce.grid`` names another; every
problem is one line naming the file, the row and the field.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import yaml

from hades_ray.config import HadesConfig, config_from_dict, set_dotted
from hades_ray.detect.settings import DETECTORS, MODES
from hades_ray.errors import ConfigError
from hades_ray.models.settings import COMMIT

UNPINNED = "main"  # a revision the grid file may give: the hub's latest commit, not pinned
ROW_KEYS = {"name", "detector", "backbone", "revision", "params", "stands_in_for", "modes", "set"}


@dataclass(frozen=True)
class Row:
    name: str
    detector: str = "transformer"
    backbone: str = ""
    revision: str = ""
    params: str = ""
    stands_in_for: str = ""
    modes: tuple[str, ...] = ("offline", "online")
    overrides: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        """How the tables name the row: the paper's name, and the stand-in where one runs instead."""
        if self.stands_in_for:
            return f"{self.name} (stand-in: {self.backbone})"
        named = ", ".join(x for x in (self.backbone, self.params) if x)
        return f"{self.name} ({named})" if named else self.name


@dataclass(frozen=True)
class Cell:
    row: str
    mode: str

    @property
    def key(self) -> str:
        return re.sub(r"[^A-Za-z0-9._-]+", "_", f"{self.row}-{self.mode}")


@dataclass
class Grid:
    path: Path
    rows: list[Row] = field(default_factory=list)

    def row(self, name: str) -> Row:
        return next(r for r in self.rows if r.name == name)

    def cells(self, modes: list[str]) -> list[Cell]:
        return [Cell(r.name, m) for m in MODES if m in modes for r in self.rows if m in r.modes]


def grid_path(config: HadesConfig) -> Path:
    name = config.reproduce.grid or config.preset
    if re.fullmatch(r"[a-z0-9_]+", name):
        return Path(str(resources.files("hades_ray") / "presets" / f"tables_{name}.yaml"))
    return Path(name).expanduser()


def _row(data, where: str) -> Row:
    if not isinstance(data, dict) or not isinstance(data.get("name"), str) or not data["name"].strip():
        raise ConfigError(f"{where}: each row is a mapping with a name")
    where = f"{where} ({data['name']})"
    unknown = set(data) - ROW_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown field {sorted(unknown)[0]!r}; known: {', '.join(sorted(ROW_KEYS))}")
    detector, modes = data.get("detector", "transformer"), data.get("modes", list(MODES))
    if detector not in DETECTORS:
        raise ConfigError(f"{where}: detector {detector!r}: one of {', '.join(DETECTORS)}")
    if not isinstance(modes, list) or not modes or any(m not in MODES for m in modes):
        raise ConfigError(f"{where}: modes: a list of offline and online")
    if detector != "transformer" and modes != ["offline"]:
        raise ConfigError(f"{where}: the feature detectors (lr, svm) are offline only, as in the paper")
    backbone, revision = str(data.get("backbone") or ""), str(data.get("revision") or "")
    if detector == "transformer" and not backbone:
        raise ConfigError(f"{where}: backbone: a hub id, a local path or local:NAME")
    if revision and revision != UNPINNED and not COMMIT.match(revision):
        raise ConfigError(f"{where}: revision {revision!r}: a hub commit (40 hex digits) or {UNPINNED!r} (unpinned)")
    overrides = data.get("set") or {}
    if not isinstance(overrides, dict):
        raise ConfigError(f"{where}: set: a mapping of config keys to values")
    return Row(
        name=data["name"].strip(),
        detector=detector,
        backbone=backbone,
        revision=revision,
        params=str(data.get("params") or ""),
        stands_in_for=str(data.get("stands_in_for") or ""),
        modes=tuple(modes),
        overrides=tuple((str(k), json.dumps(v)) for k, v in overrides.items()),
    )


def read_grid(config: HadesConfig) -> Grid:
    """The grid file's rows, restricted to ``reproduce.rows`` when it names some."""
    path = grid_path(config)
    if not path.is_file():
        raise ConfigError(f"reproduce.grid: {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: not valid YAML: {' '.join(str(error).split())[:200]}") from None
    rows_data = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows_data, list) or not rows_data:
        raise ConfigError(f"{path}: expected a mapping with a non-empty list `rows`")
    rows = [_row(r, f"{path}: rows[{i}]") for i, r in enumerate(rows_data)]
    names = [r.name for r in rows]
    if len(set(names)) < len(names):
        raise ConfigError(f"{path}: two rows have the same name")
    wanted = config.reproduce.rows
    missing = [n for n in wanted if n not in names]
    if missing:
        raise ConfigError(f"reproduce.rows: {missing[0]!r} is not a row of {path} ({', '.join(names)})")
    return Grid(path, [r for r in rows if not wanted or r.name in wanted])


def pin_grid(config: HadesConfig, grid: Grid) -> None:
    """Record every pinned backbone in ``models.revisions`` (so trials, detectors and the resolved config
    all name the commit); ``main`` stays unpinned."""
    for row in grid.rows:
        if row.backbone and row.revision and row.revision != UNPINNED:
            config.models.revisions[row.backbone] = row.revision


def cell_config(base: dict, grid: Grid, cell: Cell) -> HadesConfig:
    """A trial's config: the experiment's, with the row's backbone and mode and its own overrides."""
    config = config_from_dict(base)
    row = grid.row(cell.row)
    if row.backbone:
        set_dotted(config, f"detect.backbone={json.dumps(row.backbone)}")
    set_dotted(config, f"detect.mode={cell.mode}")
    for key, value in row.overrides:
        set_dotted(config, f"{key}={value}")
    return config_from_dict(config.to_dict())  # validated, like every config built
