"""The ``score`` config section: how ``hades-ray score`` scores free text (its flags override it)."""

from __future__ import annotations

from dataclasses import dataclass

from hades_ray.detect.settings import MODES
from hades_ray.errors import ConfigError

WORD_CHOICES = ("content", "all")  # content: no stop words or punctuation, entities whole; all: every word
MAX_CHARS = 20_000  # the default over-long limit: about 4,000 words, pages of generated text


@dataclass
class ScoreConfig:
    mode: str | None = None  # online | offline; None: the detector's own
    words: str = "content"
    threshold: float | None = None  # flag words with p(H) at or above it; None: the detector's stored one
    max_chars: int = MAX_CHARS  # longer texts are quarantined as text_too_long
    shard_size: int = 256  # texts per shard (the unit a worker reads, scores and writes)
    num_gpus: float = 0.0  # per scoring actor
    stride: int = 0  # causal online windows: tokens between window starts (0: a quarter window)
    html: bool = False  # also write report.html

    def validate(self) -> None:
        checks = [
            (self.mode is None or self.mode in MODES, f"score.mode: {' or '.join(MODES)} (or null: the detector's)"),
            (self.words in WORD_CHOICES, f"score.words: {' or '.join(WORD_CHOICES)}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
