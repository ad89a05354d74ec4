"""Words of generated text, as the guard sees them.

Two units meet here. The generator resamples a *chunk*: the tokens from one that starts with
whitespace up to the next such token (so `` Paris,`` is one chunk). The detector scores *words* the
way the perturbation job cut its training texts (``\\w+`` runs and single punctuation marks,
hades_ray/perturb/spans.py), each with only its left context (online mode). A chunk's p(H) is the
highest p(H) of the content words in it; a chunk without one (punctuation, stop words) is not judged.
"""

from __future__ import annotations

import re

from hades_ray.text.stopwords import english_stop_words

DETECTOR_WORDS = re.compile(r"\w+|[^\w\s]", re.UNICODE)
WORD_CHAR = re.compile(r"\w", re.UNICODE)


def is_judged(word: str, words: str = "content") -> bool:
    """Whether the guard asks the detector about ``word``: any word with a letter or digit under
    ``all``; under ``content`` (the default, as ``hades-ray score``) stop words are skipped too."""
    if not any(ch.isalnum() for ch in word):
        return False
    return words == "all" or word.lower() not in english_stop_words("nltk")


def chunk_items(prefix: str, chunk: str, words: str = "content") -> list[dict]:
    """Detector items (``{"words", "start", "end"}``) for the judged words of ``chunk``, which follows
    ``prefix`` (prompt plus the text generated before it), each with ``span``: its characters in
    ``chunk``. Online mode reads only ``words[:end + 1]``, so nothing after a word reaches its score."""
    before = DETECTOR_WORDS.findall(prefix)
    found = list(DETECTOR_WORDS.finditer(chunk))
    inside = [m.group() for m in found]
    if before and inside and WORD_CHAR.match(prefix[-1]) and WORD_CHAR.match(chunk[0]):
        # The chunk continues the prefix's last word (a prompt cut mid-word): judge the whole word.
        inside[0] = before.pop() + inside[0]
    all_words = before + inside
    return [
        {"words": all_words, "start": len(before) + k, "end": len(before) + k, "span": (m.start(), m.end())}
        for k, m in enumerate(found)
        if is_judged(inside[k], words)
    ]


def starts_with_space(piece: str) -> bool:
    return bool(piece) and piece[0].isspace()
