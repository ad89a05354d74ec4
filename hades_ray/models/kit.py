"""The offline model kit's layout and settings: ``$HADES_RAY_HOME/models/{mlm,gpt2}``, each finished
folder marked by its ``build_info.json``; what building (build.py) and evaluating (evaluate.py) share."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from hades_ray.models.train_gpt2 import Gpt2TrainConfig
from hades_ray.models.train_mlm import MlmTrainConfig

MODEL_NAMES = ("mlm", "gpt2")
INFO_FILE = "build_info.json"


@dataclass
class KitConfig:
    """Everything a build depends on; stored (resolved) in each model's ``build_info.json``."""

    mlm: MlmTrainConfig = field(default_factory=MlmTrainConfig)
    gpt2: Gpt2TrainConfig = field(default_factory=Gpt2TrainConfig)
    heldout_fraction: float = 0.1
    mlm_eval_texts: int = 150
    gpt2_pairs: int = 200
    baseline: bool = False  # also score MiniLM with an untrained head (``models evaluate`` does)
    seed: int = 0


def kit_config(
    seed: int = 0,
    mlm_minutes: float | None = None,
    gpt2_minutes: float | None = None,
    mlm_steps: int | None = None,
    gpt2_steps: int | None = None,
) -> KitConfig:
    """The default kit (fixed steps, no time box) with the CLI's overrides; minutes > 0 add a time box."""
    config = KitConfig(seed=seed)
    config.mlm.seed = config.gpt2.seed = seed
    for limits, minutes, steps in (
        (config.mlm.limits, mlm_minutes, mlm_steps),
        (config.gpt2.limits, gpt2_minutes, gpt2_steps),
    ):
        if minutes is not None:
            limits.max_seconds = minutes * 60 if minutes > 0 else None
        if steps is not None:
            limits.max_steps = steps
    return config


def models_root(home: str | Path | None = None) -> Path:
    from hades_ray.models.registry import hades_home

    return Path(home).expanduser() / "models" if home else hades_home() / "models"


def is_built(directory: Path) -> bool:
    """A finished model folder: a config and the completion marker."""
    return (directory / "config.json").is_file() and (directory / INFO_FILE).is_file()


def model_status(home: str | Path | None = None) -> dict[str, dict]:
    """Per model: its folder, whether it is built, and its build info when it is."""
    root = models_root(home)
    status = {}
    for name in MODEL_NAMES:
        directory = root / name
        built = is_built(directory)
        info = json.loads((directory / INFO_FILE).read_text()) if built else None
        status[name] = {"path": str(directory), "built": built, "info": info}
    return status
