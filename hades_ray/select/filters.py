"""The selection steps of a round as pure functions over stored scores; none of them runs a model."""

from __future__ import annotations

import numpy as np
import pandas as pd


def find_thresholds(p_h: np.ndarray, target: int) -> tuple[float, float]:
    """Low/high p(H) thresholds trimming both tails equally so that about ``target`` values remain."""
    values = np.sort(np.asarray(p_h, dtype=float))
    if target <= 0 or target >= len(values):
        return 0.0, 1.0
    excess = len(values) - target
    drop_low = excess // 2
    drop_high = excess - drop_low
    return float(values[drop_low]), float(values[len(values) - drop_high - 1])


def threshold_keep(p_h: np.ndarray, low: float, high: float) -> np.ndarray:
    """True where ``low <= p(H) <= high``."""
    p_h = np.asarray(p_h, dtype=float)
    return (p_h >= low) & (p_h <= high)


def paraphrase_keep(similarity: np.ndarray, threshold: float) -> np.ndarray:
    """True where the replacement is not a paraphrase (similarity to the original at most ``threshold``)."""
    return np.asarray(similarity, dtype=float) <= threshold


def obvious_swaps(features: pd.DataFrame, entity_types: list[str]) -> np.ndarray:
    """True where original and replacement carry the same entity type among ``entity_types`` (Date->Date...)."""
    orig, repl = features["orig_ent"].astype(str).values, features["repl_ent"].astype(str).values
    return (orig == repl) & np.isin(orig, list(entity_types))


def swap_keep(features: pd.DataFrame, entity_types: list[str], drop_share: float, seed: int) -> np.ndarray:
    """Drop a seeded random ``drop_share`` of the obvious swaps; keep everything else."""
    swaps = np.flatnonzero(obvious_swaps(features, entity_types))
    rng = np.random.default_rng(seed)
    n_drop = round(drop_share * len(swaps))
    keep = np.ones(len(features), dtype=bool)
    keep[rng.choice(swaps, size=n_drop, replace=False)] = False
    return keep


def rebalance_keep(pred: np.ndarray, ratio: float, seed: int) -> np.ndarray:
    """Keep every predicted non-hallucination and a seeded random share ``ratio`` of predicted ones."""
    pred = np.asarray(pred, dtype=int)
    positives = np.flatnonzero(pred == 1)
    rng = np.random.default_rng(seed)
    n_keep = round(ratio * len(positives))
    keep = pred != 1
    keep[rng.choice(positives, size=n_keep, replace=False)] = True
    return keep


def sample_batch(ids: np.ndarray, size: int, seed: int) -> np.ndarray:
    """A seeded random batch of at most ``size`` ids, in a stable order."""
    ids = np.asarray(ids)
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(ids), size=min(size, len(ids)), replace=False)
    return ids[np.sort(chosen)]


def expected_balance(n_pred_h: float, n_pred_n: float, rates: dict, ratio: float) -> tuple[float, float]:
    """Expected true H and N after keeping ``ratio`` of the predicted H (precision and false-omission rate)."""
    gamma, omission = rates["gamma"], rates["false_omission"]
    h = ratio * n_pred_h * gamma + n_pred_n * omission
    n = ratio * n_pred_h * (1 - gamma) + n_pred_n * (1 - omission)
    return h, n
