"""A trained detector folder: its kind, mode, threshold, backbone and revision, and its scoring stages.

``Detector.open`` reads the folder's ``detector.json`` through ``hades_ray/detect/description.py``; the
stages are the ones ``predict``, ``evaluate``, ``score`` (LR/SVM) and the selection rounds run.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

from hades_ray.detect.description import read_description, write_description
from hades_ray.detect.settings import MODES
from hades_ray.detect.threshold import DEFAULT_THRESHOLD


@dataclass(frozen=True)
class Detector:
    """A detector folder and its parsed ``detector.json``."""

    folder: Path
    meta: dict

    @classmethod
    def open(cls, folder: str | Path) -> Detector:
        """The detector in ``folder``; a missing, unreadable or foreign ``detector.json`` is a one-line error."""
        return cls(Path(folder), read_description(folder))

    @property
    def kind(self) -> str:
        """``transformer`` (the span classifier), ``lr`` or ``svm``."""
        return self.meta["type"]

    @property
    def mode(self) -> str:
        """The context it trained with: ``online`` (left context only) or ``offline``."""
        return self.meta.get("mode", "offline")

    @property
    def backbone(self) -> str:
        """The model reference it builds on: the span classifier's backbone, or the features' MLM."""
        return self.meta.get("backbone") or self.meta.get("mlm", "")

    @property
    def revision(self) -> str | None:
        """The hub commit the backbone trained at (None: a local model or a feature detector)."""
        return self.meta.get("revision")

    @property
    def threshold(self) -> float:
        """The threshold chosen by max G-Mean on validation data; 1/2 for detectors older than that."""
        stored = self.meta.get("threshold")
        value = stored.get("threshold") if isinstance(stored, dict) else None
        if isinstance(value, (int, float)) and math.isfinite(value) and 0.0 <= value <= 1.0:
            return float(value)
        return DEFAULT_THRESHOLD

    def store_threshold(self, choice: dict) -> Detector:
        """Add the validation threshold ``choice`` to ``detector.json``; returns the updated detector."""
        meta = {**self.meta, "threshold": choice}
        write_description(self.folder, meta)
        return Detector(self.folder, meta)

    def scoring_mode(self, requested: str | None = None) -> str:
        """The mode to score in: ``requested`` (``--mode``) or the trained one; LR/SVM only offline."""
        from hades_ray.config import ConfigError

        mode = requested or self.mode
        if mode not in MODES:
            raise ConfigError(f"--mode {mode!r}: online or offline")
        if self.kind != "transformer" and mode != "offline":
            raise ConfigError(f"{self.folder}: an {self.kind} detector scores offline only (use --mode offline)")
        return mode

    def require_online(self) -> None:
        """The guard's need: a span classifier trained online (it sees only the text before each word)."""
        from hades_ray.errors import UserError

        if self.kind != "transformer":
            raise UserError(
                f"{self.folder} is an {self.kind} detector; the guard needs an online transformer detector "
                "(hades-ray train --detector transformer --mode online)"
            )
        if self.mode != "online":
            raise UserError(
                f"{self.folder}: the guard needs an online detector (it sees only the text before each word), "
                f"but this one was trained with mode={self.mode!r}; train one with --mode online"
            )

    def identity(self) -> str:
        """The folder and its files' names, sizes and times: scores kept from another (or a retrained)
        detector never pass as this one's."""
        files = sorted(p for p in self.folder.iterdir() if p.is_file())
        stamps = [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files]
        return hashlib.sha256(json.dumps([str(self.folder.resolve()), stamps]).encode()).hexdigest()

    def config(self):
        """The ``HadesConfig`` it trained with (``config.resolved.yaml`` in the folder)."""
        import yaml

        from hades_ray.config import config_from_dict

        return config_from_dict(yaml.safe_load((self.folder / "config.resolved.yaml").read_text(encoding="utf-8")))

    def stages(self, detect, num_gpus: float = 0.0) -> list:
        """The pipeline stages that add ``p_hallucination`` and ``pred`` to a table of ``words``, ``start``,
        ``end``, with the ``detect`` section's resources: the span classifier (an actor pool, ``num_gpus``
        each), or spaCy tags + MLM features + the linear model."""
        from hades_ray.pipeline.stage import Resources

        folder = str(self.folder.resolve())
        if self.kind == "transformer":
            from hades_ray.detect.scoring import SpanScoreStage

            resources = Resources(**detect.actor_resources(num_gpus, batch_size=detect.score_batch_size * 8))
            return [SpanScoreStage(resources, folder, detect.score_batch_size)]
        from hades_ray.detect.feature_pipeline import LinearScoreStage, model_feature_stages

        linear = Resources(num_cpus=0.25, batch_size=1024)
        return [*model_feature_stages(self.meta, detect), LinearScoreStage(linear, folder)]
