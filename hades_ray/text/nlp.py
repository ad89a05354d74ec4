"""spaCy pipelines, loaded once per process (every stage that analyses text shares the loaded one)."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=2)
def load_spacy(name: str):
    import spacy

    return spacy.load(name)
