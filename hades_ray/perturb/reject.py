"""The reasons a text is refused before any model runs (too long, markup, not prose, not English)."""

from __future__ import annotations

import re

from hades_ray.perturb.settings import ReadConfig

_HTML = re.compile(r"<\s*(script|style|iframe|/?[a-zA-Z][a-zA-Z0-9]*(\s[^<>]*)?/?)\s*>|&lt;\s*script", re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
# A small closed list suffices to tell English prose from other languages; masking uses NLTK's list
# (hades_ray/text/stopwords.py), this one only guards the input.
_ENGLISH_FUNCTION_WORDS = frozenset(
    """the of and to in a is was for on as by with that at from his her it an were are which this be or has
    had he she its their also they not but have one been who first after into other""".split()
)


def reject_reason(text: str, config: ReadConfig) -> str:
    """Why ``text`` cannot be perturbed (before any model runs), or ``""`` if it can."""
    if not text or not text.strip():
        return "empty_text"
    if len(text) > config.max_chars:
        return "too_long"
    if "\ufffd" in text or any(ord(c) < 32 and c not in "\t\n\r" for c in text):
        return "invalid_characters"
    if _HTML.search(text):
        return "html_markup"
    visible = [c for c in text if not c.isspace()]
    if sum(c.isalpha() for c in visible) < config.min_alpha_ratio * len(visible):
        return "not_prose"
    words = _WORD.findall(text.lower())
    if not words or sum(w in _ENGLISH_FUNCTION_WORDS for w in words) < config.min_english_stopword_ratio * len(words):
        return "non_english"
    return ""
