"""The selection steps of a round as pure functions over stored scores; none of them runs a model.

Every random choice is a per-row decision keyed by a seeded hash of (seed, round, purpose, id), so
it needs no global array: a row's fate does not depend on which shard, block or actor it lands in,
and the same seed gives the same batch however the pool is laid out. The batch itself is the
``size`` rows with the smallest sample key: each shard keeps its own ``size`` smallest, and merging
those short lists gives exactly the global choice.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterable

import numpy as np
import pandas as pd

from hades_ray.text.languages import entity_label_forms, entity_name

BINS = 10_000  # p(H) histogram resolution: thresholds found from it are exact to 1/BINS
_SCALE = float(2**64)


def row_uniform(ids: Iterable[str], seed: int, round_index: int, purpose: str) -> np.ndarray:
    """A uniform number in [0, 1) per id, fixed by (seed, round, purpose, id) alone."""
    prefix = f"{seed}|{round_index}|{purpose}|".encode()
    values = [int.from_bytes(hashlib.blake2b(prefix + str(i).encode(), digest_size=8).digest(), "big") for i in ids]
    return np.asarray(values, dtype=np.float64) / _SCALE


def threshold_keep(p_h: np.ndarray, low: float, high: float) -> np.ndarray:
    """True where ``low <= p(H) <= high``."""
    p_h = np.asarray(p_h, dtype=float)
    return (p_h >= low) & (p_h <= high)


def paraphrase_keep(similarity: np.ndarray, threshold: float) -> np.ndarray:
    """True where the replacement is not a paraphrase (similarity to the original at most ``threshold``)."""
    return np.asarray(similarity, dtype=float) <= threshold


def obvious_swaps(features: pd.DataFrame, entity_types: list[str]) -> np.ndarray:
    """True where a Date or Name was replaced by a Date or Name: both the original's and the
    replacement's entity type are among ``entity_types`` (the paper, §3.3: "recognized as a Date or Name, and
    replaced by a different Date or Name", so DATE->PERSON counts as well as DATE->DATE). A type matches
    by the name it goes by and by its aliases (``text/languages.py``: WikiNER's PER is a PERSON), in
    ``entity_types`` as in features stored before the tagger resolved them."""
    orig, repl = features["orig_ent"].astype(str).values, features["repl_ent"].astype(str).values
    kinds = list(entity_label_forms(entity_types))
    return np.isin(orig, kinds) & np.isin(repl, kinds)


SWAP_PARTS = {"DATE": "Date", "PERSON": "Name"}  # the paper's words for the default swap types


def unlabeled_swap_message(language: str, pipeline: str, labels, entity_types: list[str]) -> str:
    """What a round says when the run's spaCy pipeline (``labels``: the entity types it labels, by their
    names here; None: not known) labels none of some of ``entity_types``: that part of the Date/Name drop
    cannot apply (the multilingual pipeline labels no dates). "" when it labels them all or is not known."""
    if labels is None:
        return ""
    missing = [name for name in dict.fromkeys(entity_name(t) for t in entity_types) if name not in labels]
    if not missing:
        return ""
    parts = " and ".join(SWAP_PARTS.get(name, name) for name in missing)
    what = f"no {', '.join(missing)} entities (only {', '.join(labels)})" if labels else "no entities"
    return (
        f"language {language}: spaCy pipeline {pipeline} labels {what}, so the {parts} part"
        f"{'s' if len(missing) > 1 else ''} of the Date/Name drop (select.swap_entity_types) cannot apply"
    )


def swap_keep(ids, obvious: np.ndarray, drop_share: float, seed: int, round_index: int) -> np.ndarray:
    """Drop each obvious swap with probability ``drop_share`` (seeded per id); keep everything else."""
    u = row_uniform(ids, seed, round_index, "swap")
    return ~np.asarray(obvious, dtype=bool) | (u >= drop_share)


def rebalance_keep(ids, pred: np.ndarray, ratio: float, seed: int, round_index: int) -> np.ndarray:
    """Keep every predicted non-hallucination, and each predicted one with probability ``ratio`` (Eq. 1)."""
    u = row_uniform(ids, seed, round_index, "rebalance")
    return (np.asarray(pred, dtype=int) != 1) | (u < ratio)


def sample_keys(ids, seed: int, round_index: int) -> np.ndarray:
    """The batch sample's key per id: the batch is the rows with the smallest keys."""
    return row_uniform(ids, seed, round_index, "sample")


def smallest(pairs: Iterable[tuple[float, str, int]], k: int) -> list[tuple[float, str, int]]:
    """The ``k`` smallest (key, id, shard) triples, in key order; merging shards' lists this way is exact."""
    return heapq.nsmallest(k, pairs)


def p_bins(p_h: np.ndarray) -> np.ndarray:
    return np.clip((np.asarray(p_h, dtype=float) * BINS).astype(np.int64), 0, BINS - 1)


def histogram(p_h: np.ndarray) -> dict[int, int]:
    """Sparse counts of p(H) per bin: what a worker returns instead of its scores."""
    bins, counts = np.unique(p_bins(p_h), return_counts=True)
    return {int(b): int(c) for b, c in zip(bins, counts)}


def thresholds_from_histogram(counts: dict[int, int], target: int, low: float = -1, high: float = -1) -> tuple:
    """(p_low, p_high) trimming the tails of a p(H) histogram so that at least ``target`` rows remain.

    A non-negative ``low``/``high`` is kept as given; only the negative ones are found (both: the
    tails are trimmed equally). Bins are never split, so the band keeps ``target`` or a few more."""
    dense = np.zeros(BINS, dtype=np.int64)
    for b, c in counts.items():
        dense[int(b)] += int(c)
    lo_fixed = int(np.clip(low * BINS, 0, BINS - 1)) if low >= 0 else None
    hi_fixed = int(np.clip(high * BINS, 0, BINS - 1)) if high >= 0 else None
    lo_bin, hi_bin = lo_fixed or 0, BINS - 1 if hi_fixed is None else hi_fixed
    total = int(dense[lo_bin : hi_bin + 1].sum())
    excess = total - target
    if target > 0 and excess > 0:
        cut_low = 0 if lo_fixed is not None else (excess // 2 if hi_fixed is None else excess)
        cut_high = 0 if hi_fixed is not None else excess - cut_low
        lo_bin = _trim(dense, lo_bin, hi_bin, cut_low, +1)
        hi_bin = _trim(dense, hi_bin, lo_bin, cut_high, -1)
    found_low = low if lo_fixed is not None else lo_bin / BINS
    found_high = high if hi_fixed is not None else (hi_bin + 1) / BINS
    return float(found_low), float(min(found_high, 1.0))


def _trim(dense: np.ndarray, edge: int, stop: int, budget: int, step: int) -> int:
    """Move ``edge`` towards ``stop`` past whole bins while their rows fit in ``budget``."""
    dropped = 0
    while edge != stop and dropped + dense[edge] <= budget:
        dropped += int(dense[edge])
        edge += step
    return edge


def expected_balance(n_pred_h: float, n_pred_n: float, rates: dict, ratio: float) -> tuple[float, float]:
    """Expected true H and N after keeping ``ratio`` of the predicted H (precision and false-omission rate)."""
    gamma, omission = rates["gamma"], rates["false_omission"]
    h = ratio * n_pred_h * gamma + n_pred_n * omission
    n = ratio * n_pred_h * (1 - gamma) + n_pred_n * (1 - omission)
    return h, n
