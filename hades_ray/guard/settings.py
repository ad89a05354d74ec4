"""The ``guard`` config section: how ``hades-ray generate`` samples and guards (its flags override it)."""

from __future__ import annotations

from dataclasses import dataclass

from hades_ray.errors import ConfigError
from hades_ray.models.settings import DTYPES
from hades_ray.score.settings import WORD_CHOICES


@dataclass
class GuardConfig:
    threshold: float | None = None  # flag words with p(H) >= it; None: the detector's stored one
    max_retries: int = 3  # resamples per flagged word (0: score every word, change none)
    words: str = "content"
    max_new_tokens: int = 60  # tokens generated per prompt
    no_end: bool = False  # never sample the end token: every generation is max_new_tokens long
    # Sampling; None keeps the generator's own generation_config value.
    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    dtype: str = "float32"  # generator dtype (auto: bfloat16 on a GPU, float32 on a CPU)
    batch_size: int = 16  # prompts generated together (one seed per batch)
    slots: int = 0  # rows in flight within a batch; a done row's slot takes the next prompt (0: the whole batch)
    shard_size: int = 1000  # prompt lines per output part file
    actors: int = 1  # generation actors (Ray executor)
    num_gpus: float = 0.0  # per generation actor (0: CPU)
    html: bool = False  # also write report.html (needs a detector)

    def validate(self) -> None:
        checks = [
            (self.words in WORD_CHOICES, f"guard.words: {' or '.join(WORD_CHOICES)}"),
            (self.dtype in DTYPES, f"guard.dtype: one of {', '.join(DTYPES)}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
