"""The ``detect`` config section: detectors, their features and their training."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from hades_ray.config import ConfigError, register_section

DETECTORS = ("transformer", "lr", "svm")
MODES = ("offline", "online")
# HaDes (Liu et al., 2022), detector training: "5e-3 for BERT and GPT-2 and 1e-3 otherwise".
HIGH_LR_FAMILIES = ("bert", "gpt2")
HIGH_LR, OTHER_LR = 5e-3, 1e-3


@dataclass
class DetectConfig:
    backbone: str = ""  # empty: models.encoder (MiniLM locally, RoBERTa-large in the paper preset)
    mode: str = "offline"  # offline: context on both sides; online: only the span and what precedes it
    window: int = 160  # subword tokens the backbone sees around the span (specials included)
    pooling: str = "max"  # over the span's subword states: max | mean
    mlp_layers: int = 2  # head depth; hidden size h/2 with tanh between layers
    # all: the backbone is frozen and only the MLP head trains (the paper) | last_layer: the last block
    # trains too | none: everything trains. The presets set it (paper: all; local: see local.yaml).
    freeze: str = "all"
    lr: float = 0.0  # 0: by backbone family, as the paper (resolve_lr); any other value is used as is
    epochs: int = 3
    batch_size: int = 16
    class_weighting: str = "balanced"  # balanced (inverse class frequency) | none
    selection_metric: str = "gmean"  # validation metric that picks the best epoch (higher is better)
    workers: int = 1  # Ray Train workers
    worker_cpus: float = 0.5  # fractional so Ray Data's read tasks always find a CPU (hades_ray/pipeline/README.md)
    use_gpu: bool = False
    torch_threads: int = 1
    max_failures: int = 1  # FailureConfig: worker restarts resumed from the last checkpoint
    # Feature detectors (LR/SVM) and their Ray Data stages
    linear_max_iter: int = 100  # the paper's limit; training stops earlier when the loss stalls
    linear_n_iter_no_change: int = 5
    linear_tol: float = 1e-4
    svm_calibration_folds: int = 3
    ppmi_vocab: int = 5000  # most frequent training words with a co-occurrence row
    ppmi_window: int = 5  # co-occurrence window in words
    feature_window: int = 256  # MLM tokens around the masked span
    feature_batch_size: int = 16
    score_batch_size: int = 32
    actors: int = 1  # actor-pool size of the model stages (feature extraction and prediction)
    actor_cpus: float = 0.5
    skip_bad: bool = False  # quarantine bad lines instead of failing on the first one

    def validate(self) -> None:
        checks = [
            (self.mode in MODES, "detect.mode: offline or online"),
            (self.pooling in ("max", "mean"), "detect.pooling: max or mean"),
            (self.freeze in ("last_layer", "all", "none"), "detect.freeze: last_layer, all or none"),
            (self.mlp_layers >= 1, "detect.mlp_layers must be >= 1"),
            (self.window >= 8, "detect.window must be >= 8 tokens"),
            (self.feature_window >= 8, "detect.feature_window must be >= 8 tokens"),
            (self.lr >= 0, "detect.lr must be > 0, or 0 for the paper's value by backbone family"),
            (self.epochs >= 1 and self.batch_size >= 1, "detect.epochs and detect.batch_size must be >= 1"),
            (self.class_weighting in ("balanced", "none"), "detect.class_weighting: balanced or none"),
            (
                self.selection_metric in ("gmean", "auc", "accuracy", "h_f1", "n_f1"),
                "detect.selection_metric: gmean, auc, accuracy, h_f1 or n_f1",
            ),
            (self.workers >= 1 and self.actors >= 1, "detect.workers and detect.actors must be >= 1"),
            (self.worker_cpus > 0 and self.actor_cpus > 0, "detect.worker_cpus and detect.actor_cpus must be > 0"),
            (1 <= self.linear_max_iter <= 100, "detect.linear_max_iter must be in [1, 100] (the paper's limit)"),
            (self.svm_calibration_folds >= 2, "detect.svm_calibration_folds must be >= 2"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)


def backbone_family(reference: str) -> str:
    """The backbone's ``model_type`` (``bert``, ``gpt2``, ``roberta``...): from its ``config.json``
    when it is on disk, from the Hugging Face cache for a hub id, else guessed from the hub id's name."""
    from hades_ray.models.registry import resolve_model

    source = resolve_model(reference)
    config_file = Path(source) / "config.json"
    if config_file.is_file():
        return str(json.loads(config_file.read_text(encoding="utf-8")).get("model_type", ""))
    try:
        from transformers import AutoConfig

        return str(AutoConfig.from_pretrained(source, trust_remote_code=False).model_type)
    except (OSError, ValueError):
        name = source.rsplit("/", 1)[-1].lower()
        return next((family for family in HIGH_LR_FAMILIES if name.startswith(family)), name.split("-")[0])


def lr_for_family(family: str) -> float:
    return HIGH_LR if family in HIGH_LR_FAMILIES else OTHER_LR


def resolve_lr(config) -> float:
    """``detect.lr`` when set (> 0), else the paper's learning rate for the backbone's family."""
    d = config.detect
    if d.lr > 0:
        return d.lr
    return lr_for_family(backbone_family(d.backbone or config.models.encoder))


register_section("detect", DetectConfig)
