"""The one record of a scored word, on every surface: ``{"word", "start", "end", "p", "flag"}``
(character offsets into the text, p(H), and whether p(H) reached the threshold).

``hades-ray score`` and ``hades-ray generate`` write it, ``Detector.score``, ``Detector.stream`` and the
stopping criterion return it, and ``POST /score`` and ``POST /score/next`` answer it; ``word_record``
builds every one. Before issue 46 ``Detector.stream``, ``/score/next`` and the stopping criterion spelt
p(H) and the flag ``p_hallucination`` and ``flagged``: ``read_word`` takes either spelling, for whatever
reads words an older version may have written or served.
"""

from __future__ import annotations

from typing_extensions import TypedDict  # typing's on Python 3.12+; pydantic needs this one before

OLD_KEYS = {"p_hallucination": "p", "flagged": "flag"}  # the spelling before issue 46: today's


class WordRecord(TypedDict):
    word: str
    start: int
    end: int
    p: float
    flag: bool


def word_record(word: str, start: int, end: int, p: float, threshold: float | None) -> WordRecord:
    """A scored word; flagged when p(H) >= ``threshold`` (None: nothing is flagged)."""
    return {"word": word, "start": start, "end": end, "p": p, "flag": threshold is not None and p >= threshold}


def read_word(word: dict) -> WordRecord:
    """``word`` in today's spelling, whether it came in today's or in the old ``p_hallucination``/``flagged``
    one (other keys kept; where both spellings are present, today's wins)."""
    if not OLD_KEYS.keys() & word.keys():
        return word
    return {OLD_KEYS.get(k, k): v for k, v in word.items() if OLD_KEYS.get(k) not in word}
