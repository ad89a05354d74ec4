"""The ``detect`` config section: detectors, their features and their training."""

from __future__ import annotations

from dataclasses import dataclass

from hades_ray.errors import ConfigError

DETECTORS = ("transformer", "lr", "svm")
MODES = ("offline", "online")
TOKENS, WORDS = "tokens", "words"
WINDOW_UNITS = (TOKENS, WORDS)  # how detect.window counts (hades_ray/detect/spans.py)


@dataclass
class DetectConfig:
    backbone: str = ""  # empty: models.encoder (MiniLM locally, RoBERTa-large in the paper preset)
    mode: str = "offline"  # offline: context on both sides; online: only the span and what precedes it
    window: int = 160  # subword tokens the backbone sees around the span (specials included)
    # tokens: as above | words: ``window`` context words besides the span (the paper's Fig. 6 counts words)
    window_unit: str = TOKENS
    pooling: str = "max"  # over the span's subword states: max | mean
    mlp_layers: int = 2  # head depth; hidden size h/2 with tanh between layers
    # all: the backbone is frozen and only the MLP head trains (the paper) | last_layer: the last block
    # trains too | none: everything trains. The presets set it (paper: all; local: see local.yaml).
    freeze: str = "all"
    lr: float = 0.0  # 0: by backbone family, as the paper (detect/learning_rate.py); any other value is used as is
    epochs: int = 3
    batch_size: int = 16
    class_weighting: str = "balanced"  # balanced (inverse class frequency) | none
    # validation metric that picks the best epoch (higher is better); epoch: the last one (a fixed count)
    selection_metric: str = "gmean"
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
            (self.window_unit in WINDOW_UNITS, "detect.window_unit: tokens or words"),
            (
                self.window >= (8 if self.window_unit == TOKENS else 1),
                "detect.window must be >= 8 tokens (window_unit tokens) or >= 1 word (window_unit words)",
            ),
            (self.feature_window >= 8, "detect.feature_window must be >= 8 tokens"),
            (self.lr >= 0, "detect.lr must be > 0, or 0 for the paper's value by backbone family"),
            (self.epochs >= 1 and self.batch_size >= 1, "detect.epochs and detect.batch_size must be >= 1"),
            (self.class_weighting in ("balanced", "none"), "detect.class_weighting: balanced or none"),
            (
                self.selection_metric in ("gmean", "auc", "accuracy", "h_f1", "n_f1", "epoch"),
                "detect.selection_metric: gmean, auc, accuracy, h_f1, n_f1 or epoch (the last)",
            ),
            (self.workers >= 1 and self.actors >= 1, "detect.workers and detect.actors must be >= 1"),
            (self.worker_cpus > 0 and self.actor_cpus > 0, "detect.worker_cpus and detect.actor_cpus must be > 0"),
            (1 <= self.linear_max_iter <= 100, "detect.linear_max_iter must be in [1, 100] (the paper's limit)"),
            (self.svm_calibration_folds >= 2, "detect.svm_calibration_folds must be >= 2"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
