"""Randomness keyed by (seed, document id, candidate index), never by batch or arrival order."""

from __future__ import annotations

import hashlib

import numpy as np


def stable_key(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def candidate_rng(seed: int, doc_id: str, candidate: int, stream: int = 0) -> np.random.Generator:
    """An independent generator per candidate; ``stream`` separates MASK draws from REPLACE draws."""
    return np.random.default_rng([seed, stable_key(doc_id), candidate, stream])
