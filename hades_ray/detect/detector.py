"""A trained detector folder, opened once: its description, its identity, and every way it scores.

``Detector.open`` reads ``detector.json`` (``hades_ray/detect/description.py``); everything after that
works from the object. ``route`` is the one place that decides how a detector scores (its kind, the
mode asked for, its window unit and whether its backbone is causal). It scores spans and words in
memory (``scorer``, ``score_instances``), or as pipeline stages for a sharded job (``stages``:
``predict``, ``evaluate``, ``score``, the selection rounds).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from hades_ray.detect.description import read_description, write_description
from hades_ray.detect.settings import MODES, TOKENS
from hades_ray.detect.spans import window_unit
from hades_ray.detect.threshold import DEFAULT_THRESHOLD


# What a detector's description must name for a store to serve it (``detect/reps.py``: its view).
_FEATURE_KEYS = ("mlm", "feature_window", "spacy_model")
STORE_KEYS = {"transformer": ("backbone", "window", "pooling", "freeze"), "lr": _FEATURE_KEYS, "svm": _FEATURE_KEYS}


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
    def window(self) -> int | None:
        """The span classifier's context window (None for a feature detector)."""
        return self.meta.get("window")

    @property
    def window_unit(self) -> str:
        """What ``window`` counts (tokens or words)."""
        return window_unit(self.meta)

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

    @cached_property
    def causal(self) -> bool:
        """Whether the span classifier's backbone is a decoder, read from its configuration (no weights)."""
        from transformers import AutoConfig

        from hades_ray.detect.causal import is_causal_config
        from hades_ray.models.registry import resolve_model

        return is_causal_config(AutoConfig.from_pretrained(resolve_model(self.backbone), revision=self.revision))

    def route(self, mode: str) -> str:
        """How this detector scores a text's words in ``mode``: ``linear`` (LR/SVM: its feature and linear
        stages), ``windows`` (a causal backbone online with a token window: one forward per text window,
        ``hades_ray/detect/causal.py``) or ``views`` (each target's own view, ``hades_ray/detect/views.py``)."""
        if self.kind != "transformer":
            return "linear"
        if mode == "online" and self.window_unit == TOKENS and self.causal:
            return "windows"
        return "views"

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

    def load_model(self, device: str = "cpu") -> tuple:
        """(tokenizer, span classifier in eval mode on ``device``); every weight is checked."""
        from hades_ray.detect.model import load_classifier
        from hades_ray.models.registry import CheckpointError

        if self.kind != "transformer":
            raise CheckpointError(f"{self.folder} is an {self.kind} detector, not a span classifier")
        return load_classifier(self.folder, self.meta, device)

    def load_head(self):
        """The head alone (in eval mode) of a span classifier whose backbone is frozen whole: what scores
        stored span vectors (``hades_ray/detect/reps.py``)."""
        from hades_ray.detect.model import load_head

        return load_head(self.folder, self.meta)

    def reads_store(self, detect) -> bool:
        """Whether this detector scores from stored span vectors under ``detect`` (``reps.reuses_store``)."""
        from hades_ray.detect.reps import reuses_store

        return self.meta.get("type") == "transformer" and reuses_store(self.meta, detect)

    def store_view(self, detect):
        """The store this detector scores from under ``detect`` (``reps.store_view_of``; None: its own stages)."""
        from hades_ray.detect.reps import store_view_of

        needs = STORE_KEYS.get(self.meta.get("type"))
        if needs is None or any(k not in self.meta for k in needs):
            return None  # a description without what a store is made from: scored by its own stages
        return store_view_of(self.meta, detect)

    def located(self) -> Detector:
        """This detector named by its absolute folder, for stages on workers (which need not share the
        driver's working directory)."""
        return Detector(self.folder.resolve(), self.meta)

    def scorer(self, mode: str | None = None, device: str = "cpu", forward_batch: int = 32, stride: int = 0):
        """The detector loaded in this process, scoring in ``mode`` (None: its own) with the route it takes
        there (``hades_ray/detect/scorer.py``)."""
        from hades_ray.detect.scorer import Scorer

        return Scorer(self, mode, device, forward_batch, stride)

    def stages(self, detect, num_gpus: float = 0.0) -> list:
        """The pipeline stages that add ``p_hallucination`` and ``pred`` to a table of ``words``, ``start``,
        ``end``, with the ``detect`` section's resources: the span classifier (an actor pool, ``num_gpus``
        each), or spaCy tags + MLM features + the linear model."""
        from hades_ray.pipeline.stage import Resources

        if self.route(self.mode) == "linear":
            from hades_ray.detect.features.stages import LinearScoreStage, model_feature_stages

            linear = Resources(num_cpus=0.25, batch_size=1024)
            return [*model_feature_stages(self.meta, detect), LinearScoreStage(linear, str(self.folder.resolve()))]
        from hades_ray.detect.scoring import SpanScoreStage

        resources = Resources(**detect.actor_resources(num_gpus, batch_size=detect.score_batch_size * 8))
        return [SpanScoreStage(resources, self.located(), detect.score_batch_size)]

    def score_instances(self, instances: list, detect) -> tuple[np.ndarray, np.ndarray]:
        """(p(H), pred) of in-memory HaDes instances, in this process: ``stages`` over them, cut into the
        sharded job's shards (``SHARD_ROWS``), so they score exactly as ``predict`` scores them from a file."""
        from hades_ray.detect.scoring import SHARD_ROWS, instances_table
        from hades_ray.pipeline.executor import run_stages

        stages = self.stages(detect)
        for stage in stages:
            stage.setup()
        p, pred = [np.zeros(0)], [np.zeros(0, dtype=int)]
        for lo in range(0, len(instances), SHARD_ROWS):
            table = run_stages(instances_table(instances[lo : lo + SHARD_ROWS]), stages, setup=False)
            p.append(table.column("p_hallucination").to_numpy().astype(np.float64))
            pred.append(table.column("pred").to_numpy().astype(int))
        return np.concatenate(p), np.concatenate(pred)

    def score_records(self, records: list[dict]) -> tuple[np.ndarray, np.ndarray]:
        """(p(H), pred) of in-memory HaDes records, under the config the detector trained with."""
        from hades_ray.detect.data import instances_from_records

        return self.score_instances(instances_from_records(records), self.config().detect)
