"""The artifact rate: the share of replacements that read as debris rather than a word.

A detector trained on replacements like ``impressionism -> "art,"`` (the text then reads "art,,")
learns the debris instead of hallucination, so each replacement is checked for:

* ``punctuation``: a punctuation character the original span did not have;
* ``repeated_word``: a word of the replacement equal to the word next to it ("he he", "the the"),
  unless the original span repeated itself the same way;
* ``token_count``: no word at all, or more whitespace-separated words than the original (a word
  filled piece by piece as several words: ``disrespect -> "sexs of the body"``).

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

ARTIFACT_KINDS = ("punctuation", "repeated_word", "token_count")
_TOKENS = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def _punctuation(text: str) -> set[str]:
    return {c for c in text if not c.isalnum() and not c.isspace()}


def _repeats(tokens: list[re.Match], text: str, inside) -> bool:
    """Two equal alphabetic words separated only by spaces, at least one of them ``inside``."""
    for left, right in zip(tokens, tokens[1:]):
        if not (inside(left) or inside(right)) or not left.group().isalpha():
            continue
        if left.group().lower() == right.group().lower() and not text[left.end() : right.start()].strip():
            return True
    return False


def _repeated_word(original: str, replacement: str, perturbed: str, start: int, end: int) -> bool:
    if _repeats(list(_TOKENS.finditer(original)), original, lambda m: True):
        return False  # "Bora Bora" may become "Tora Tora"
    window_start, window_end = max(0, start - 80), min(len(perturbed), end + 80)
    tokens = [m for m in _TOKENS.finditer(perturbed, window_start, window_end)]
    return _repeats(tokens, perturbed, lambda m: m.start() < end and m.end() > start)


def span_artifacts(original: str, replacement: str, perturbed: str, start: int, end: int) -> list[str]:
    """The artifact kinds (of ``ARTIFACT_KINDS``) of one replacement; empty when it is clean.
    ``start``/``end`` are the replacement's character offsets in ``perturbed``."""
    found = []
    if _punctuation(replacement) - _punctuation(original):
        found.append("punctuation")
    if _repeated_word(original, replacement, perturbed, start, end):
        found.append("repeated_word")
    words = len(replacement.split())
    if words == 0 or words > len(original.split()):
        found.append("token_count")
    return found


def count_artifacts(rows: Iterable[dict]) -> Counter:
    """Counts over pool rows (``perturbed`` and ``spans``): ``replacements``, ``with_artifacts``, one
    count per kind, and ``unchanged`` (a replacement equal to its original, case aside)."""
    counts: Counter = Counter({"replacements": 0, "with_artifacts": 0, "unchanged": 0})
    for row in rows:
        for span in row["spans"] or []:
            kinds = span_artifacts(span["original"], span["replacement"], row["perturbed"], span["start"], span["end"])
            counts["replacements"] += 1
            counts["with_artifacts"] += bool(kinds)
            counts["unchanged"] += span["replacement"].strip().lower() == span["original"].strip().lower()
            counts.update(kinds)
    return counts


def artifact_summary(counts: dict) -> dict:
    """``summary["artifacts"]``: replacements, those with any artifact, their rate, counts by kind
    (and ``unchanged`` when counted)."""
    replacements, flagged = int(counts.get("replacements", 0)), int(counts.get("with_artifacts", 0))
    summary = {
        "replacements": replacements,
        "with_artifacts": flagged,
        "rate": round(flagged / replacements, 4) if replacements else None,
        "by_kind": {kind: int(counts.get(kind, 0)) for kind in ARTIFACT_KINDS},
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


def flagged_examples(rows: Iterable[dict], limit: int) -> list[str]:
    """Up to ``limit`` lines ``doc: original -> "replacement" [kinds]`` for flagged replacements."""
    lines = []
    for row in rows:
        for span in row["spans"] or []:
            kinds = span_artifacts(span["original"], span["replacement"], row["perturbed"], span["start"], span["end"])
            if kinds and len(lines) < limit:
                context = row["perturbed"][max(0, span["start"] - 20) : span["end"] + 20].replace("\n", " ")
                lines.append(f'{row["doc_id"]}: {span["original"]} -> "{span["replacement"]}" {kinds}  …{context}…')
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hades_ray.perturb.artifacts", description=__doc__.split("\n")[0])
    parser.add_argument("output", help="a finished `hades-ray perturb --output` folder")
    parser.add_argument("--examples", type=int, default=0, help="also print this many flagged replacements")
    args = parser.parse_args(argv)
    try:
        summary = artifact_summary(count_artifacts(pool_rows(args.output)))
    except FileNotFoundError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=2))
    for line in flagged_examples(pool_rows(args.output), args.examples):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
