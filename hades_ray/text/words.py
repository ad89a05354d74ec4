"""Words, per language: the units of HaDes instances (``replaced``), of detector targets and of word offsets.

In a language written with spaces a word is a run of word characters (letters, digits and the combining
marks that Devanagari, Arabic or Thai vowels are written with, which Python's ``\\w`` leaves out) or one
other visible character. In Chinese, Japanese and Thai, where nothing separates words, the runs are cut
where the language's spaCy tokenizer (its segmenter: jieba, SudachiPy, PyThaiNLP) puts word edges.
A HaDes ``replaced`` field joins words with spaces in every language; ``join_words`` is its inverse.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import lru_cache

from hades_ray.text.languages import Language, language

JOINERS = "\u200c\u200d"  # zero-width (non-)joiner: inside Persian and Indic words


def is_mark(char: str) -> bool:
    """A combining mark (a Devanagari vowel sign, Arabic tanwin) or a zero-width joiner: part of a word."""
    return unicodedata.category(char)[0] == "M" or char in JOINERS


def is_word(text: str, letters_only: bool = False) -> bool:
    """``text`` is one word: letters (and digits, unless ``letters_only``) with the marks written on them,
    at least one of them a letter or digit (``str.isalnum`` / ``isalpha``, which call a vowel sign punctuation)."""
    base = str.isalpha if letters_only else str.isalnum
    return any(base(c) for c in text) and all(base(c) or is_mark(c) for c in text)


@lru_cache(maxsize=1)
def _mark_class() -> str:
    """The combining marks (Unicode categories Mn, Mc, Me) as a regex class body, built once per process."""
    ranges, start = [], None
    for code in range(sys.maxunicode + 2):
        is_mark = code <= sys.maxunicode and unicodedata.category(chr(code))[0] == "M"
        if is_mark and start is None:
            start = code
        elif not is_mark and start is not None:
            ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(code - 1))}")
            start = None
    return "".join(ranges)


@lru_cache(maxsize=1)
def word_pattern() -> re.Pattern:
    """A word (word characters and marks, joined across a zero-width joiner) or one other visible character."""
    marks = _mark_class()
    return re.compile(rf"[\w{marks}]+(?:[{JOINERS}]+[\w{marks}]+)*|[^\w\s{marks}]", re.UNICODE)


def _spaced_spans(text: str, offset: int = 0) -> list[tuple[int, int]]:
    return [(m.start() + offset, m.end() + offset) for m in word_pattern().finditer(text)]


def word_spans(text: str, lang: Language | str) -> list[tuple[int, int]]:
    """``(start, end)`` character ranges of the words of ``text`` in ``lang``, in order."""
    lang = language(lang)
    if lang.spaced:
        return _spaced_spans(text)
    from hades_ray.text.pipeline import word_tokenizer

    spans: list[tuple[int, int]] = []
    for token in word_tokenizer(lang)(text):
        # a segmenter's token may hold spaces or several runs (Thai's spaces, "3.5kg"): cut it like a spaced word
        spans += _spaced_spans(token.text, token.idx)
    return spans


def words(text: str, lang: Language | str) -> list[str]:
    """The words of ``text`` (``word_spans``' texts)."""
    return [text[start:end] for start, end in word_spans(text, lang)]


def span_words(span: str, lang: Language | str) -> list[str]:
    """The words of a span's text as an instance's own span is put back (a batch's original text, a round's
    windows): whitespace-separated in the default language, as its instances always were; the language's
    words elsewhere (Chinese has no spaces to split at)."""
    lang = language(lang)
    return span.split() if lang.is_default else words(span, lang)


def join_words(items: list[str], lang: Language | str) -> str:
    """Words back into running text: with spaces, or without them in a language written without."""
    return language(lang).join(items)
