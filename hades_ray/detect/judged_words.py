"""Words of generated text, as the guard sees them.

Two units meet here. The generator resamples a *chunk*: the tokens from one that starts with
whitespace up to the next such token (so `` Paris,`` is one chunk). The detector scores *words* the
way the perturbation job cut its training texts (``hades_ray/text/words.py``: runs of word characters
and combining marks, and single punctuation marks; the segmenter's words where a language writes none
apart), each with only its left context (online mode). A chunk's p(H) is the highest p(H) of the
content words in it; a chunk without one (punctuation, stop words) is not judged.
"""

from __future__ import annotations

from hades_ray.text.languages import Language
from hades_ray.text.stopwords import stop_words
from hades_ray.text.words import word_spans


def is_judged(word: str, words: str = "content", *, lang: Language) -> bool:
    """Whether the guard asks the detector about ``word``: any word with a letter or digit under
    ``all``; under ``content`` (the default, as ``hades-ray score``) the language's stop words are skipped too."""
    if not any(ch.isalnum() for ch in word):
        return False
    return words == "all" or word.lower() not in stop_words("auto", lang)


def chunk_items(prefix: str, chunk: str, words: str = "content", *, lang: Language) -> list[dict]:
    """Detector items (``{"words", "start", "end"}``) for the judged words of ``chunk``, which follows
    ``prefix`` (prompt plus the text generated before it), each with ``span``: its characters in
    ``chunk``. Online mode reads only ``words[:end + 1]``, so nothing after a word reaches its score.
    A chunk that continues the prefix's last word (a prompt cut mid-word) is judged as the whole word."""
    text, cut = prefix + chunk, len(prefix)
    spans = word_spans(text, lang)
    all_words = [text[s:e] for s, e in spans]
    return [
        {"words": all_words, "start": k, "end": k, "span": (max(s - cut, 0), e - cut)}
        for k, (s, e) in enumerate(spans)
        if e > cut and is_judged(all_words[k], words, lang=lang)
    ]


def word_start(text: str, at: int, lang: Language) -> int:
    """Where the word of ``text`` that runs across position ``at`` starts (``at`` when none does)."""
    return next((s for s, e in word_spans(text, lang) if s < at < e), at)


def starts_with_space(piece: str) -> bool:
    return bool(piece) and piece[0].isspace()
