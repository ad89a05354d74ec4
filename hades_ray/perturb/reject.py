"""The reasons a text is refused before any model runs (too long, markup, not prose, not in the run's language)."""

from __future__ import annotations

import re
import unicodedata

from hades_ray.perturb.settings import ReadConfig
from hades_ray.text.languages import Language
from hades_ray.text.stopwords import reads_as

_HTML = re.compile(r"<\s*(script|style|iframe|/?[a-zA-Z][a-zA-Z0-9]*(\s[^<>]*)?/?)\s*>|&lt;\s*script", re.IGNORECASE)


def reject_reason(text: str, config: ReadConfig, language: Language) -> str:
    """Why ``text`` cannot be perturbed (before any model runs), or ``""`` if it can; a text that reads as
    another language than the run's (too few of its function words: ``text.stopwords.reads_as``) is
    ``Language.other_language_reason`` (``non_english`` in English runs, else ``not_LANG``)."""
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
    if not reads_as(text, language, config.min_english_stopword_ratio):
        return language.other_language_reason
    return ""
