"""MASK: choose word spans per candidate and turn each into as many [MASK] tokens as it has subwords."""

from __future__ import annotations

from hades_ray.perturb.settings import MaskConfig
from hades_ray.text.seeding import candidate_rng

MASK_STREAM = 0


def align_units(units: list[dict], offsets: list[tuple[int, int]], config: MaskConfig) -> list[dict]:
    """Attach each unit's token range; drop units whose edges cut a subword token, that lie past the
    truncated input, or that are longer than ``max_span_tokens``."""
    aligned = []
    for unit in units:
        inside = [i for i, (s, e) in enumerate(offsets) if e > s and s < unit["end"] and e > unit["start"]]
        if not inside:
            continue
        first, last = inside[0], inside[-1]
        if offsets[first][0] < unit["start"] or offsets[last][1] > unit["end"]:
            continue  # the tokenizer's pieces straddle the word's edge: masking would leak characters
        if last - first + 1 > config.max_span_tokens:
            continue
        aligned.append({**unit, "token_start": first, "token_end": last + 1})
    return aligned


def spans_to_mask(num_units: int, config: MaskConfig) -> int:
    """How many spans a candidate masks: the ratio of the eligible units, at least ``min_spans``."""
    if num_units == 0:
        return 0
    return min(num_units, max(config.min_spans, round(config.ratio * num_units)))


def choose_spans(units: list[dict], config: MaskConfig, seed: int, doc_id: str, candidate: int) -> list[int]:
    """Indices (ascending) of the units masked in one candidate."""
    count = spans_to_mask(len(units), config)
    if count == 0:
        return []
    rng = candidate_rng(seed, doc_id, candidate, MASK_STREAM)
    return sorted(int(i) for i in rng.choice(len(units), size=count, replace=False))


def tokenize_for_mask(tokenizer, text: str, max_length: int) -> tuple[list[int], list[tuple[int, int]]]:
    """Token ids (with special tokens) and character offsets; special tokens get (0, 0)."""
    encoded = tokenizer(text, truncation=True, max_length=max_length, return_offsets_mapping=True)
    return list(encoded["input_ids"]), [tuple(o) for o in encoded["offset_mapping"]]
