"""The ``score`` config section: how ``hades-ray score`` scores free text (its flags override it)."""

from __future__ import annotations

from dataclasses import dataclass

from hades_ray.config_keys import INT32, key
from hades_ray.detect.settings import MODES

WORD_CHOICES = ("content", "all")  # content: no stop words or punctuation, entities whole; all: every word
MAX_CHARS = 20_000  # the default over-long limit: about 4,000 words, pages of generated text


@dataclass
class ScoreConfig:
    mode: str | None = key(
        None,
        choices=MODES,
        null="the detector's",
        help="online: a word sees only the text before it; offline: both sides",
    )
    words: str = key(
        "content",
        choices=WORD_CHOICES,
        help="content: every word but stop words and punctuation, entities whole (default); all: every word",
    )
    threshold: float | None = key(
        None,
        "[0, 1]",
        null="the detector's threshold, chosen on validation data",
        help="flag words with p(H) at or above this",
    )
    max_chars: int = key(MAX_CHARS, f"[1, {INT32}]", help="longer texts are quarantined as text_too_long")
    shard_size: int = key(256, f"[1, {INT32}]", help="texts per shard (the unit a worker reads, scores and writes)")
    num_gpus: float = key(0.0, "[0, 64]", help="GPUs per scoring actor on a cluster (0: CPU; 0.5 packs two)")
    stride: int = key(
        0,
        f"[0, {INT32}]",
        help="causal online detectors, texts longer than the window: tokens between window starts (0: a quarter "
        "window; 1 gives every word exactly its training left context, at one forward per word)",
    )
    html: bool = key(False, help="also write report.html: the texts shaded by p(H)")
