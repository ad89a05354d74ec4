"""Span bookkeeping: apply replacements to the original text, and cut HaDes instances from the result."""

from __future__ import annotations

from hades_ray.io.hades_format import Instance
from hades_ray.text.languages import Language
from hades_ray.text.words import words


def _lowercasing(tokenizer) -> bool:
    return bool(getattr(tokenizer, "do_lower_case", False)) or tokenizer.tokenize("A") == tokenizer.tokenize("a")


def _token_text(tokenizer, token_id: int) -> str:
    token = tokenizer.convert_ids_to_tokens(int(token_id))
    if token.startswith("##"):
        return token[2:]
    return tokenizer.convert_tokens_to_string([token]).strip()


def _match_case(text: str, like: str) -> str:
    if len(like) > 1 and like.isupper():
        return text.upper()
    return text[:1].upper() + text[1:] if like[:1].isupper() else text


def _laid_out(tokenizer, token_ids: list[int], original: str) -> str | None:
    """The filled tokens with the original's spacing between them (and its exact characters where a
    token was kept), or None when the original does not tokenize to as many tokens."""
    encoded = tokenizer(original, add_special_tokens=False, return_offsets_mapping=True)
    if len(encoded["input_ids"]) != len(token_ids):
        return None
    restore_case = _lowercasing(tokenizer)
    pieces, previous_end = [], None
    for token_id, kept_id, (start, end) in zip(token_ids, encoded["input_ids"], encoded["offset_mapping"]):
        if previous_end is not None:
            pieces.append(original[previous_end:start])
        word = original[start:end]
        text = word if token_id == kept_id else _token_text(tokenizer, token_id)
        pieces.append(_match_case(text, word) if restore_case and token_id != kept_id else text)
        previous_end = end
    return "".join(pieces).strip()


def decode_replacement(tokenizer, token_ids: list[int], original: str) -> str:
    """The replacement's text laid out like ``original`` (same spaces between tokens); an uncased
    tokenizer's output takes the case of the original token it replaces."""
    laid_out = _laid_out(tokenizer, token_ids, original)
    if laid_out is not None:
        return laid_out
    text = tokenizer.decode(token_ids, clean_up_tokenization_spaces=True).strip()
    if _lowercasing(tokenizer) and text and original[:1].isupper():
        text = text[0].upper() + text[1:]
    return text


def apply_replacements(original: str, spans: list[dict]) -> tuple[str, list[dict]]:
    """``spans`` (ascending, non-overlapping, with ``orig_start``, ``orig_end``, ``replacement``) applied
    to ``original``; returns the perturbed text and the spans with ``start``/``end`` in it."""
    pieces, placed, cursor, shift = [], [], 0, 0
    for span in spans:
        pieces.append(original[cursor : span["orig_start"]])
        start = span["orig_start"] + shift
        pieces.append(span["replacement"])
        end = start + len(span["replacement"])
        shift += len(span["replacement"]) - (span["orig_end"] - span["orig_start"])
        cursor = span["orig_end"]
        placed.append({**span, "start": start, "end": end, "original": original[span["orig_start"] : span["orig_end"]]})
    pieces.append(original[cursor:])
    return "".join(pieces), placed


def words_with_span_indices(
    text: str, spans: list[dict], language: Language
) -> tuple[list[str], list[tuple[int, int]]]:
    """The words of ``text`` in ``language`` (text/words.py) and each span's [first, last] word indices.
    Words are cut per segment between span edges, so span edges are always word edges."""
    found: list[str] = []
    ranges: list[tuple[int, int]] = []
    cursor = 0
    for span in spans:
        found += words(text[cursor : span["start"]], language)
        first = len(found)
        found += words(text[span["start"] : span["end"]], language)
        ranges.append((first, len(found) - 1))
        cursor = span["end"]
    found += words(text[cursor:], language)
    return found, ranges


def instance_rows(
    doc_id: str, perturbed: str, spans: list[dict], lowercase: bool = False, *, language: Language
) -> list[dict]:
    """One instance per replaced span (label -1: not yet judged), as the columns of ``instances/*.parquet``:
    the words, and the span's word range."""
    words, ranges = words_with_span_indices(perturbed, spans, language)
    words = [w.lower() for w in words] if lowercase else words
    return [
        {
            "id": f"{doc_id}#{index}",
            "doc_id": doc_id,
            "words": words,
            "start": first,
            "end": last,
            "replacement": span["replacement"],
            "original_span": span["original"],
            "ner": span["ner"],
            "pos": span["pos"],
            "hallucination": -1,
        }
        for index, (span, (first, last)) in enumerate(zip(spans, ranges))
        if last >= first  # a replacement with no word characters cannot be a target span
    ]


def hades_record(row: dict, language: Language) -> dict:
    """An instance row in the published HaDes format; any language but English is named in a ``language``
    field (``Language.record_fields``: the published files, all English, have none)."""
    extra = {key: row[key] for key in ("id", "doc_id", "original_span", "replacement", "ner", "pos")}
    extra |= language.record_fields()
    return Instance(row["words"], row["start"], row["end"], row["hallucination"], extra).to_json()


def hades_instances(
    doc_id: str, perturbed: str, spans: list[dict], lowercase: bool = False, *, language: Language
) -> list[dict]:
    """One HaDes-format record per replaced span."""
    rows = instance_rows(doc_id, perturbed, spans, lowercase, language=language)
    return [hades_record(row, language) for row in rows]
