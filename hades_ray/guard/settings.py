"""The ``guard`` config section: how ``hades-ray generate`` samples and guards (its flags override it)."""

from __future__ import annotations

from dataclasses import dataclass

from hades_ray.config_keys import BIG, key
from hades_ray.models.settings import DTYPES
from hades_ray.score.settings import WORD_CHOICES

MODEL_OWN = "the model's"  # sampling left unset keeps the generator's own generation_config value


@dataclass
class GuardConfig:
    threshold: float | None = key(None, "[0, 1]", null="the detector's", help="flag words with p(H) >= T")
    max_retries: int = key(3, f"[0, {BIG}]", help="resamples per flagged word (0: score, change none)")
    words: str = key("content", choices=WORD_CHOICES, help="judge content words only (default) or every word")
    max_new_tokens: int = key(60, f"[1, {BIG}]", help="tokens generated per prompt")
    no_end: bool = key(False, help="never sample the end token: all --max-new-tokens long")
    temperature: float | None = key(None, f"(0, {BIG}]", null=MODEL_OWN, help="sampling temperature")
    top_k: int | None = key(None, f"[0, {BIG}]", null=MODEL_OWN, help="top-k sampling")
    top_p: float | None = key(None, "(0, 1]", null=MODEL_OWN, help="nucleus sampling")
    dtype: str = key("float32", choices=DTYPES, help="generator dtype (auto: bfloat16 on a GPU, float32 on a CPU)")
    batch_size: int = key(16, f"[1, {BIG}]", help="prompts generated together (one seed per batch)")
    slots: int = key(
        0,
        f"[0, {BIG}]",
        help="rows in flight within a batch: a done row's slot takes the batch's next prompt (0: all at once)",
    )
    shard_size: int = key(1000, f"[1, {BIG}]", help="prompt lines per output part file")
    actors: int = key(1, "[1, 10000]", help="generation actors (Ray executor)")
    num_gpus: float = key(0.0, "[0, 64]", help="GPUs per generation actor (0: CPU)")
    html: bool = key(False, help="also write report.html (needs --guard)")
