"""The artifact rate: the share of replacements that read as debris rather than a word.

A detector trained on replacements like ``impressionism -> "art,"`` (the text then reads "art,,")
learns the debris instead of hallucination, so each replacement is checked for:

* ``punctuation``: a punctuation character the original span did not have;
* ``repeated_word``: a word of the replacement equal to the word next to it ("he he", "the the"),
  unless the original span repeated itself the same way;
* ``token_count``: no word at all, or more words than the original (a word filled piece by piece as
  several words: ``disrespect -> "sexs of the body"``): whitespace-separated words where a language is
  written with spaces, the segmenter's words (``hades_ray.text.words``) in Chinese, Japanese and Thai;
* ``glued`` (spaced languages but English): an edge of the replacement that is a word character touching a
  word character of its neighbour, with no space between (the span "boot" of "Hausboot" replaced: "Hausschiff").
  Joined with spaces, the instance's words then no longer give the text ("Haus schiff"), so a detector sees
  another text than the judges. In Chinese, Japanese and Thai every word touches its neighbours: not an
  artifact there.
  English is not checked: its counts (and the golden digests of its summaries) predate the kind.

English keeps its original checks character for character. In other languages the combining marks that
Devanagari, Arabic or Thai vowels are written with count as parts of words, not as punctuation.

Pure functions over the pool's columns; ``python -m hades_ray.perturb.artifacts OUTPUT`` measures a
finished run post hoc from ``OUTPUT/pool/part-*.parquet``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from hades_ray.errors import UserError
from hades_ray.text.languages import Language
from hades_ray.text.words import is_mark, is_word, word_spans, words

ARTIFACT_KINDS = ("punctuation", "repeated_word", "token_count")
GLUED = "glued"
REPEAT_WINDOW = 80  # characters each side of a replacement searched for a repeated word
_TOKENS = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_WORD_CHAR = re.compile(r"\w", re.UNICODE)


def artifact_kinds(language: Language) -> tuple[str, ...]:
    """The kinds checked in ``language`` (the keys of ``by_kind``): ``glued`` in spaced languages but the
    default one, English (``Language.is_default``: its counts predate the kind)."""
    return ARTIFACT_KINDS + ((GLUED,) if language.spaced and not language.is_default else ())


def _is_word_char(char: str) -> bool:
    """A character of a word in any language: ``\\w`` or a combining mark (a Devanagari vowel sign)."""
    return bool(_WORD_CHAR.match(char)) or is_mark(char)


def _punctuation(text: str, marks_are_letters: bool = False) -> set[str]:
    return {c for c in text if not c.isalnum() and not c.isspace() and not (marks_are_letters and is_mark(c))}


def _is_alphabetic(word: str) -> bool:
    """Letters, and the marks written on them (``str.isalpha`` on a word without marks)."""
    return is_word(word, letters_only=True)


def _repeats(tokens: list[tuple[int, int]], text: str, inside) -> bool:
    """Two equal alphabetic words separated only by spaces, at least one of them ``inside``."""
    for (l_start, l_end), (r_start, r_end) in zip(tokens, tokens[1:]):
        left, right = text[l_start:l_end], text[r_start:r_end]
        if not (inside(l_start, l_end) or inside(r_start, r_end)) or not _is_alphabetic(left):
            continue
        if left.lower() == right.lower() and not text[l_end:r_start].strip():
            return True
    return False


def _tokens(text: str, lo: int, hi: int, language: Language) -> list[tuple[int, int]]:
    """``(start, end)`` of the words of ``text[lo:hi]``, in ``text``'s offsets: the language's words; in
    English (``Language.is_default``) runs of ``\\w`` and single other characters, as it was always checked."""
    if language.is_default:
        return [m.span() for m in _TOKENS.finditer(text, lo, hi)]
    return [(lo + start, lo + end) for start, end in word_spans(text[lo:hi], language)]


def _repeated_word(original: str, perturbed: str, start: int, end: int, language: Language) -> bool:
    if _repeats(_tokens(original, 0, len(original), language), original, lambda a, b: True):
        return False  # "Bora Bora" may become "Tora Tora"
    lo, hi = max(0, start - REPEAT_WINDOW), min(len(perturbed), end + REPEAT_WINDOW)
    return _repeats(_tokens(perturbed, lo, hi, language), perturbed, lambda a, b: a < end and b > start)


def _glued(perturbed: str, start: int, end: int) -> bool:
    """An edge of the replacement (``perturbed[start:end]``) that is a word character touching one of its
    neighbour's, with no space between: the span was a piece of a longer word ("boot" of "Hausboot"),
    and the instance's words, joined with spaces, split that word in two."""
    if start >= end:
        return False
    before = start > 0 and _is_word_char(perturbed[start - 1]) and _is_word_char(perturbed[start])
    after = end < len(perturbed) and _is_word_char(perturbed[end - 1]) and _is_word_char(perturbed[end])
    return before or after


def span_artifacts(
    original: str, replacement: str, perturbed: str, start: int, end: int, language: Language
) -> list[str]:
    """The artifact kinds (of ``artifact_kinds(language)``) of one replacement; empty when it is clean.
    ``start``/``end`` are the replacement's character offsets in ``perturbed``."""
    found = []
    marks_are_letters = not language.is_default  # English's checks predate the marks' reading as letters
    if _punctuation(replacement, marks_are_letters) - _punctuation(original, marks_are_letters):
        found.append("punctuation")
    if _repeated_word(original, perturbed, start, end, language):
        found.append("repeated_word")
    count = _count_words(replacement, language)
    if count == 0 or count > _count_words(original, language):
        found.append("token_count")
    if GLUED in artifact_kinds(language) and _glued(perturbed, start, end):
        found.append(GLUED)
    return found


def _count_words(text: str, lang: Language) -> int:
    """Whitespace-separated words where a language is written with spaces; else the segmenter's words
    that hold a word character (its punctuation is the ``punctuation`` kind's)."""
    if lang.spaced:
        return len(text.split())
    return sum(any(_is_word_char(c) for c in word) for word in words(text, lang))


def count_artifacts(rows: Iterable[dict], language: Language) -> Counter:
    """Counts over pool rows (``perturbed`` and ``spans``) of a run in ``language``: ``replacements``,
    ``with_artifacts``, one count per kind, and ``unchanged`` (a replacement equal to its original, case aside)."""
    counts: Counter = Counter({"replacements": 0, "with_artifacts": 0, "unchanged": 0})
    for row in rows:
        for span in row["spans"] or []:
            kinds = _row_span_artifacts(row, span, language)
            counts["replacements"] += 1
            counts["with_artifacts"] += bool(kinds)
            counts["unchanged"] += span["replacement"].strip().lower() == span["original"].strip().lower()
            counts.update(kinds)
    return counts


def _row_span_artifacts(row: dict, span: dict, language: Language) -> list[str]:
    return span_artifacts(span["original"], span["replacement"], row["perturbed"], span["start"], span["end"], language)


def artifact_summary(counts: dict, language: Language) -> dict:
    """``summary["artifacts"]`` of a run in ``language``: replacements, those with any artifact, their rate,
    counts by kind (``artifact_kinds(language)``) and ``unchanged`` when counted."""
    replacements, flagged = int(counts.get("replacements", 0)), int(counts.get("with_artifacts", 0))
    summary = {
        "replacements": replacements,
        "with_artifacts": flagged,
        "rate": round(flagged / replacements, 4) if replacements else None,
        "by_kind": {kind: int(counts.get(kind, 0)) for kind in artifact_kinds(language)},
    }
    if "unchanged" in counts:
        summary["unchanged"] = int(counts["unchanged"])
    return summary


def pool_rows(output: str | Path) -> Iterable[dict]:
    """The pool rows of a finished run (``OUTPUT/pool/part-*.parquet``), part by part."""
    import pyarrow.parquet as pq

    parts = sorted(Path(output, "pool").glob("part-*.parquet"))
    if not parts:
        raise FileNotFoundError(f"no pool/part-*.parquet under {output}; run `hades-ray perturb` there first")
    for part in parts:
        yield from pq.read_table(part, columns=["doc_id", "perturbed", "spans"]).to_pylist()


def flagged_examples(rows: Iterable[dict], limit: int, language: Language) -> list[str]:
    """Up to ``limit`` lines ``doc: original -> "replacement" [kinds]`` for flagged replacements."""
    lines = []
    for row in rows:
        for span in row["spans"] or []:
            kinds = _row_span_artifacts(row, span, language)
            if kinds and len(lines) < limit:
                context = row["perturbed"][max(0, span["start"] - 20) : span["end"] + 20].replace("\n", " ")
                lines.append(f'{row["doc_id"]}: {span["original"]} -> "{span["replacement"]}" {kinds}  …{context}…')
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hades_ray.perturb.artifacts", description=__doc__.split("\n")[0])
    parser.add_argument("output", help="a finished `hades-ray perturb --output` folder")
    # Not --examples: that is `hades-ray perturb`'s flag for perturbed examples (default 3), another meaning.
    parser.add_argument("--flagged", type=int, default=0, help="also print this many flagged replacements")
    args = parser.parse_args(argv)
    from hades_ray.config import recorded_language

    try:
        language = recorded_language(args.output)  # what its config.resolved.yaml says
        summary = artifact_summary(count_artifacts(pool_rows(args.output), language), language)
    except (FileNotFoundError, UserError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=2))
    for line in flagged_examples(pool_rows(args.output), args.flagged, language):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
