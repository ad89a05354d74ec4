"""A text scored as it grows: the score job's target words completed since the last call, with p(H) from
the detector's incremental judge (``Scorer.incremental``), so that a call costs what its new words cost
and not what the text before them does. ``Detector.stream``, ``POST /score/next`` and the stopping
criterion all answer through ``TextStream.feed``; the guard asks the same judges word by word.

What a call reads of the text so far:
- **words**: the text's units (``score/words.py``) are cut again only from a whitespace before the last
  returned word's end (in a language written with spaces a unit never runs across whitespace); the
  units before it are kept from earlier calls. Chinese, Japanese and Thai, whose segmenter reads its
  context, are cut whole each call.
- **entities** (``words="content"``): spaCy reads the text from ``ENTITY_CONTEXT`` units before the first
  pending word, and a named entity is one target as in ``score``.
- **p(H)**: the judge gets the new targets with the units before them. An encoder's view reads only the
  window before a target (``Scorer.score_spans``), a causal backbone's key/value cache keeps the window
  it scores in (``detect/incremental.py``).

The words of all calls together are those of one ``score`` of the final text: the same units always,
and under ``content`` the same entities wherever spaCy finds, in the text as it stood when a word was
completed, the entity edges it finds in the final text. A name can grow after a boundary ("Niels", then
"Niels Bohr"), so under ``content`` a word is out only once ``ENTITY_LOOKAHEAD`` complete words follow
it; spaCy can still move an edge later (1 of 155 content targets on 300 words of held-out leads).
p(H) is the same bits for an encoder; for a causal backbone a window's cached forward rounds apart from
score's whole-window forward (within 1e-6: tests/api/test_stream_cost.py; 1.5e-7 on the kit's GPT-2).
"""

from __future__ import annotations

from bisect import bisect_right

from hades_ray.score.word_record import WordRecord, word_record
from hades_ray.score.words import find_targets, has_word_char, units
from hades_ray.text.languages import Language

ENTITY_CONTEXT = 48  # units spaCy reads before the first pending word: its tagger's and NER's reach and more
# Under ``content`` a word waits for this many complete words after it: a name may still grow ("Niels",
# then "Niels Bohr") and spaCy decides an entity's edge from the words that follow it.
ENTITY_LOOKAHEAD = 2


class TextStream:
    """One text as it grows, scored by ``judge`` (its row ``row``): ``feed(text_so_far, final)``."""

    def __init__(self, judge, words: str, nlp, lang: Language, threshold: float, since: int = 0, row: int = 0):
        self.judge, self.words, self.nlp, self.lang = judge, words, nlp, lang
        self.threshold, self.since, self.row = threshold, since, row
        judge.begin(row + 1)
        self._base = ""  # text[:len(_base)], ending at whitespace: its units are ``_units``
        self._units: tuple[list[str], list[int], list[int]] = ([], [], [])

    def feed(self, text: str, final: bool = False) -> list[WordRecord]:
        """The target words starting at or after ``since`` that are complete (a character follows them, and
        under ``content`` ``ENTITY_LOOKAHEAD`` complete words; or ``final``), each ``word_record``'s;
        ``since`` moves to the last one's end."""
        cut = self._cut(text, self.since, ENTITY_CONTEXT if self.words == "content" else 0)
        words, starts, ends = self._units_before(text, cut)
        found = find_targets(text[cut:], self.words, self.nlp, lang=self.lang)
        base = len(words)
        words = words + found.words
        starts = starts + [cut + s for s in found.starts]
        ends = ends + [cut + e for e in found.ends]
        lookahead = ENTITY_LOOKAHEAD if self.words == "content" else 0
        complete = [k for k in range(base, len(ends)) if ends[k] < len(text) and has_word_char(words[k])]
        first, last = [], []
        for f, la in zip(found.first, found.last):
            if starts[base + f] < self.since:
                continue
            if not final and (ends[base + la] >= len(text) or _words_after(complete, base + la) < lookahead):
                break
            first.append(base + f)
            last.append(base + la)
        if not first:
            return []
        (p,) = self.judge.score_targets([(self.row, words[: last[-1] + 1], first, last)])
        self.since = ends[last[-1]]
        return [
            word_record(text[starts[f] : ends[la]], starts[f], ends[la], float(v), self.threshold)
            for f, la, v in zip(first, last, p)
        ]

    def _cut(self, text: str, at: int, units_back: int) -> int:
        """Where this call cuts the text again: a whitespace's end at or before ``at`` (``units_back`` units
        before it for spaCy's context); 0 where the language's segmenter reads the whole text."""
        if not self.lang.spaced:
            return 0
        at = min(at, len(text))
        if units_back:
            _, starts, _ = self._units_before(text, _after_space(text, at))
            at = starts[-units_back] if len(starts) >= units_back else 0
        return _after_space(text, at)

    def _units_before(self, text: str, cut: int) -> tuple[list[str], list[int], list[int]]:
        """The units of ``text[:cut]`` (``cut`` after whitespace), cutting only what earlier calls have not."""
        if not text.startswith(self._base):  # an earlier part changed (a decoder's clean-up): cut it again
            self._base, self._units = "", ([], [], [])
        if cut > len(self._base):
            more, starts, ends = units(text[len(self._base) : cut], self.lang)
            shift = len(self._base)
            words, s0, e0 = self._units
            words += more
            s0 += [shift + s for s in starts]
            e0 += [shift + e for e in ends]
            self._base = text[:cut]
        words, starts, ends = self._units
        k = bisect_right(ends, cut)  # no unit runs across whitespace, so none is cut at ``cut``
        return words[:k], starts[:k], ends[:k]


def _words_after(complete: list[int], unit: int) -> int:
    """How many of the complete word units (indices, ascending) come after ``unit``."""
    return len(complete) - bisect_right(complete, unit)


def _after_space(text: str, at: int) -> int:
    """The end of the last whitespace at or before ``at`` (0 when none): no unit runs across it."""
    while at > 0 and not text[at - 1].isspace():
        at -= 1
    return at
