"""Which words of a free text get a p(H): the units a detector reads, and the target spans among them.

A text is cut into the units HaDes instances are made of (``hades_ray/text/words.py``: runs of word
characters and combining marks, and single punctuation marks; in Chinese, Japanese and Thai the runs are
cut where the language's segmenter puts word edges), each with its character range in the text, so the
detector reads generated text exactly as it read its training data. Targets are content words by
default: every word but the language's stop words (English: the paper's NLTK list, as MASK uses) and
punctuation, in every sentence, with a named entity (spaCy) scored as one span. ``all`` makes every
word a target of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hades_ray.text.languages import Language
from hades_ray.text.stopwords import stop_words
from hades_ray.text.words import word_spans

WORD = re.compile(r"\w", re.UNICODE)


@dataclass(frozen=True)
class Targets:
    """A text's units (``words`` with character ranges) and the target spans as unit indices."""

    words: list[str]
    starts: list[int]
    ends: list[int]
    first: list[int]  # per target: its first unit
    last: list[int]  # per target: its last unit (inclusive)


def units(text: str, lang: Language) -> tuple[list[str], list[int], list[int]]:
    """The words of ``text`` in language ``lang`` and their character ranges."""
    spans = word_spans(text, lang)
    return [text[s:e] for s, e in spans], [s for s, _ in spans], [e for _, e in spans]


def has_word_char(token: str) -> bool:
    """A unit with a word character (a letter, digit or ``_``): not a punctuation mark or symbol, nor a
    combining mark standing alone (a vowel sign is part of the word whose letters it follows)."""
    return bool(WORD.search(token))


def _entity_of_unit(starts: list[int], ends: list[int], entities: list[tuple[int, int]]) -> list[int]:
    """For each unit, the index of the entity whose characters contain it, or -1."""
    owner, k = [-1] * len(starts), 0
    for i, (s, e) in enumerate(zip(starts, ends)):
        while k < len(entities) and entities[k][1] <= s:
            k += 1
        if k < len(entities) and entities[k][0] <= s and e <= entities[k][1]:
            owner[i] = k
    return owner


def find_targets(
    text: str, words: str = "content", nlp=None, stops: frozenset[str] | None = None, *, lang: Language
) -> Targets:
    """The units of ``text`` (language ``lang``) and its target spans; ``nlp`` (spaCy) finds entities for
    ``content``; ``stops`` defaults to the language's stop words."""
    tokens, starts, ends = units(text, lang)
    first: list[int] = []
    last: list[int] = []
    if words == "all":
        for i, token in enumerate(tokens):
            if has_word_char(token):
                first.append(i)
                last.append(i)
        return Targets(tokens, starts, ends, first, last)
    stops = stop_words("auto", lang) if stops is None else stops
    entities = sorted((e.start_char, e.end_char) for e in nlp(text).ents) if nlp is not None else []
    owner = _entity_of_unit(starts, ends, entities)
    i = 0
    while i < len(tokens):
        if owner[i] >= 0:
            j = i
            while j + 1 < len(tokens) and owner[j + 1] == owner[i]:
                j += 1
            if any(_is_content(tokens[k], stops) for k in range(i, j + 1)):
                first.append(i)
                last.append(j)
            i = j + 1
            continue
        if _is_content(tokens[i], stops):
            first.append(i)
            last.append(i)
        i += 1
    return Targets(tokens, starts, ends, first, last)


def _is_content(token: str, stops: frozenset[str]) -> bool:
    return has_word_char(token) and token.lower() not in stops
