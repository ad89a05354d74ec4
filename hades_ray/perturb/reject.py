"""The reasons a text is refused before any model runs (too long, markup, not prose, not in the run's language)."""

from __future__ import annotations

import re
import unicodedata

from hades_ray.perturb.settings import ReadConfig

_HTML = re.compile(r"<\s*(script|style|iframe|/?[a-zA-Z][a-zA-Z0-9]*(\s[^<>]*)?/?)\s*>|&lt;\s*script", re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
# A small closed list suffices to tell English prose from other languages; masking uses NLTK's list
# (hades_ray/text/stopwords.py), this one only guards the input.
_ENGLISH_FUNCTION_WORDS = frozenset(
    """the of and to in a is was for on as by with that at from his her it an were are which this be or has
    had he she its their also they not but have one been who first after into other""".split()
)


def _too_few_function_words(text: str, ratio: float, language: str) -> bool:
    """Whether ``text`` has fewer of ``language``'s function words per word than ``ratio``: a cheap check
    that a text is in the language the run is set to, so it is not masked with another's stop words."""
    if language == "en":
        found = _WORD.findall(text.lower())
        marks = _ENGLISH_FUNCTION_WORDS
    else:
        from hades_ray.text.stopwords import stop_words
        from hades_ray.text.words import words

        found = [w.lower() for w in words(text, language) if any(c.isalpha() for c in w)]
        marks = stop_words("auto", language)
    return not found or sum(w in marks for w in found) < ratio * len(found)


def reject_reason(text: str, config: ReadConfig, language: str = "en") -> str:
    """Why ``text`` cannot be perturbed (before any model runs), or ``""`` if it can; a text that reads as
    another language than the run's is ``non_english`` (English runs) or ``not_LANG``."""
    if not text or not text.strip():
        return "empty_text"
    if len(text) > config.max_chars:
        return "too_long"
    if "\ufffd" in text or any(ord(c) < 32 and c not in "\t\n\r" for c in text):
        return "invalid_characters"
    if _HTML.search(text):
        return "html_markup"
    visible = [c for c in text if not c.isspace()]
    # vowel signs (Devanagari, Thai, Arabic harakat) are combining marks, not letters, yet part of words
    if sum(c.isalpha() or unicodedata.category(c)[0] == "M" for c in visible) < config.min_alpha_ratio * len(visible):
        return "not_prose"
    if _too_few_function_words(text, config.min_english_stopword_ratio, language):
        return "non_english" if language == "en" else f"not_{language}"
    return ""
