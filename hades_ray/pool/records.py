"""An instance record's original words: what the features' windows and the batch's display rebuild."""

from __future__ import annotations

from hades_ray.text.languages import Language
from hades_ray.text.words import span_words


def original_span_words(row, language: Language) -> list[str]:
    """The words of the instance's original span (``text.words.span_words``: whitespace-separated in English,
    as its instances have always been rebuilt; the language's words elsewhere)."""
    return span_words(str(row["original_span"]), language)


def original_words(row, language: Language) -> list[str]:
    """The instance's words with its own span put back (other replaced spans stay as they are)."""
    found = list(row["words"])
    return found[: row["start"]] + original_span_words(row, language) + found[row["end"] + 1 :]
