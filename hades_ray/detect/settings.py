"""The ``detect`` config section: detectors, their features and their training."""

from __future__ import annotations

from dataclasses import dataclass

from hades_ray.config_keys import key, require

DETECTORS = ("transformer", "lr", "svm")
MODES = ("offline", "online")
TOKENS, WORDS = "tokens", "words"
WINDOW_UNITS = (TOKENS, WORDS)  # how detect.window counts (hades_ray/detect/spans.py)
SELECTION_METRICS = ("gmean", "auc", "accuracy", "h_f1", "n_f1", "epoch")


@dataclass
class DetectConfig:
    backbone: str = ""  # empty: models.encoder (MiniLM locally, roberta-large in the paper preset: our choice)
    mode: str = key(
        "offline", choices=MODES, help="offline: context on both sides; online: only the span and what precedes it"
    )
    window: int = key(160, "[1, 1000000]")  # subword tokens the backbone sees around the span (specials included)
    # tokens: as above | words: ``window`` context words besides the span (the paper's Fig. 6 gives no unit)
    window_unit: str = key(TOKENS, choices=WINDOW_UNITS, help="what detect.window counts: subword tokens, or words")
    pooling: str = key("max", choices=("max", "mean"))  # over the span's subword states (max: §4-5)
    # Which of the backbone's hidden states a span is pooled from: -1 the last (the paper pools the last
    # layer's hidden states, §4 "Transformer-based models"; and every detector from before the key), 0 the
    # embeddings, k the output of block k; negatives count from the last.
    # A probe (train --detector probe) reads its generator's states there during generation.
    layer: int = key(-1, "[-1000, 1000]", help="the backbone's hidden state spans are pooled from (-1: the last)")
    mlp_layers: int = key(2, "[1, 16]")  # head depth (2: §5); tanh between layers (§4)
    # The head's hidden size; 0: half the backbone's (h/2, the paper's best, §5). The paper swept it without
    # naming the values it tried.
    mlp_hidden: int = key(0, "[0, 65536]", help="the MLP head's hidden size (0: half the backbone's)")
    # all: the backbone is frozen and only the MLP head trains (our reading of §5's "freezes the model
    # parameters up to the last layer of M and just fine-tunes the binary MLP classifier") | last_layer: the last block
    # trains too | none: everything trains. The presets set it (paper: all; local: see local.yaml).
    freeze: str = key("all", choices=("last_layer", "all", "none"))
    # With freeze all, fits, sweeps, folds, rounds and scoring read the frozen backbone's span vectors from
    # a store made once per view and data (hades_ray/detect/reps.py); false runs the backbone every time.
    reuse_frozen: bool = key(True, help="reuse stored span representations of a frozen backbone (freeze: all)")
    lr: float = key(0.0, "[0, 1]")  # 0: by backbone family, as the paper (train/learning_rate.py); else used as is
    epochs: int = key(3, "[1, 10000]", help="training epochs (transformer detectors)")
    batch_size: int = key(16, "[1, 100000]")
    class_weighting: str = key("balanced", choices=("balanced", "none"))  # balanced: inverse class frequency
    # validation metric that picks the best epoch (higher is better); epoch: the last one (a fixed count)
    selection_metric: str = key("gmean", choices=SELECTION_METRICS)
    workers: int = key(1, "[1, 10000]", help="Ray Train workers")
    # fractional so Ray Data's read tasks always find a CPU (hades_ray/pipeline/README.md)
    worker_cpus: float = key(0.5, "(0, 1024]")
    use_gpu: bool = False
    torch_threads: int = key(1, "[1, 1024]")
    max_failures: int = key(1, "[0, 100]")  # FailureConfig: worker restarts resumed from the last checkpoint
    # Feature detectors (LR/SVM) and their Ray Data stages
    linear_max_iter: int = key(100, "[1, 100]")  # the paper's limit (§4); training stops earlier when the loss stalls
    linear_n_iter_no_change: int = key(5, "[1, 1000]")
    linear_tol: float = key(1e-4, "(0, 1]")
    svm_calibration_folds: int = key(3, "[2, 100]")
    ppmi_vocab: int = key(5000, "[1, 10000000]")  # most frequent training words with a co-occurrence row
    ppmi_window: int = key(5, "[1, 1000]")  # co-occurrence window in words
    feature_window: int = key(256, "[8, 1000000]")  # MLM tokens around the masked span
    feature_batch_size: int = key(16, "[1, 100000]")
    score_batch_size: int = key(32, "[1, 100000]")
    actors: int = key(1, "[1, 10000]")  # actor-pool size of the model stages (feature extraction and prediction)
    actor_cpus: float = key(0.5, "(0, 1024]")
    skip_bad: bool = key(False, help="quarantine bad lines instead of failing on the first one")

    def validate(self) -> None:
        require(
            (
                self.window >= (8 if self.window_unit == TOKENS else 1),
                "detect.window must be >= 8 tokens (window_unit tokens) or >= 1 word (window_unit words)",
            ),
        )

    def actor_resources(self, num_gpus: float = 0.0, batch_size: int = 64, max_actors: int = 0) -> dict:
        """The ``pipeline.stage.Resources`` of one detector actor: ``actor_cpus``, ``actors`` (unless
        ``max_actors``) and ``torch_threads``."""
        return {
            "num_cpus": self.actor_cpus,
            "num_gpus": num_gpus,
            "max_actors": max_actors or self.actors,
            "batch_size": batch_size,
            "torch_threads": self.torch_threads,
        }
