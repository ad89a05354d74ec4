"""Reading the report's inputs: each missing or unreadable one is a one-line error naming the path."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from hades_ray.errors import UserError


class ReportInputError(UserError):
    """An input folder or file the report cannot use (the message names it and says what to run)."""


def read_json(path: Path, what: str) -> dict:
    """A JSON object from ``path``; missing, unreadable or not an object is a ``ReportInputError``."""
    if not path.is_file():
        raise ReportInputError(f"{path}: missing ({what})")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ReportInputError(f"{path}: unreadable JSON ({what}): {error}") from None
    if not isinstance(data, dict):
        raise ReportInputError(f"{path}: expected a JSON object ({what})")
    return data


def require_dir(path: str | Path, flag: str, hint: str) -> Path:
    folder = Path(path)
    if not folder.is_dir():
        raise ReportInputError(f"{flag} {folder}: no such folder; {hint}")
    return folder


def read_pool_rows(pool: Path, columns: list[str], limit: int | None = None) -> list[dict]:
    """Rows of the pool parts in order, the first ``limit`` of them (None: all): a whole-corpus pool
    never has to fit in the driver, which stops reading parts once it has enough."""
    import pyarrow.parquet as pq

    parts = sorted((pool / "pool").glob("part-*.parquet"))
    if not parts:
        raise ReportInputError(f"--pool {pool}: no pool/part-*.parquet; run `hades-ray perturb --output {pool}` first")
    rows: list[dict] = []
    for part in parts:
        if limit is not None and len(rows) >= limit:
            break
        try:
            rows += pq.read_table(part, columns=columns).to_pylist()
        except Exception as error:  # pyarrow raises several types for a damaged or foreign file
            raise ReportInputError(f"{part}: unreadable pool part: {error}") from None
    return rows[:limit]


def read_yaml_config(path: Path):
    """The resolved config a job wrote beside its output (``config.resolved.yaml``)."""
    from hades_ray.config import config_from_dict

    if not path.is_file():
        raise ReportInputError(f"{path}: missing (the resolved config the job writes beside its output)")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise ReportInputError(f"{path}: unreadable YAML: {error}") from None
    return config_from_dict(data)


def round_folders(workdir: Path) -> list[Path]:
    """``round-NNN`` folders that hold a ``round.json`` (a selected round), in order."""
    rounds = sorted(p for p in workdir.glob("round-[0-9][0-9][0-9]") if (p / "round.json").is_file())
    if not rounds:
        raise ReportInputError(f"--workdir {workdir}: no round-NNN/round.json; run `hades-ray round` there first")
    return rounds


def parse_detector_arg(value: str) -> tuple[str, Path]:
    """``NAME=PATH`` or ``PATH`` (named after the folder or file)."""
    name, _, path = value.partition("=") if "=" in value and not Path(value).exists() else ("", "", value)
    path = Path(path)
    if not path.exists():
        raise ReportInputError(f"--detector {value}: no such detector folder or predictions file")
    return name or (path.stem if path.is_file() else path.name), path
