"""Rebalancing by Eq. 1 of the paper (§3.3; derived in App. C, Eqs. 2-9): how many predicted hallucinations
to keep so H and N even out.

With a detector of TPR alpha, TNR beta and precision gamma, keeping a share R of the instances it
predicts as hallucination (and every instance it predicts as not) leaves, in expectation,
``R*alpha*h + (1-alpha)*h`` true hallucinations and ``R*(1-beta)*n + beta*n`` true non-hallucinations.
Setting them equal, with ``n = alpha*h*(1-gamma) / (gamma*(1-beta))``, gives

    R = (-2*alpha*beta*gamma + alpha*beta + beta*gamma + alpha*gamma - gamma) / ((2*gamma - 1) * alpha * (1 - beta))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Ratio:
    value: float  # the share of predicted hallucinations to keep, in [0, 1]
    raw: float | None  # Eq. 1 before clipping; None when undefined
    message: str  # empty when Eq. 1 applied as is


def subsampling_ratio(alpha: float, beta: float, gamma: float) -> float:
    """Eq. 1, clipped to [0, 1]; raises ``ValueError`` where undefined (gamma = 1/2, beta = 1, alpha = 0, or
    a detector that predicts H for everything: alpha = 1 and beta = 0)."""
    return explain_ratio(alpha, beta, gamma, strict=True).value


def explain_ratio(alpha: float, beta: float, gamma: float, strict: bool = False) -> Ratio:
    """Eq. 1 with what was done when it is undefined or out of range (``strict``: raise instead of R = 1)."""
    for name, value in (("alpha", alpha), ("beta", beta), ("gamma", gamma)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {value}")
    undefined = [
        why
        for why, bad in (
            ("gamma = 1/2 (the detector's precision is chance)", np.isclose(gamma, 0.5)),
            ("beta = 1 (no false positives, so the balance cannot be estimated from precision)", np.isclose(beta, 1.0)),
            ("alpha = 0 (the detector predicts no true hallucination)", np.isclose(alpha, 0.0)),
            # R = 0 would follow, and drop every predicted H: the detector's all-H answer carries no signal.
            (
                "alpha = 1 and beta = 0 (the detector predicts H for everything)",
                np.isclose(alpha, 1.0) and np.isclose(beta, 0.0),
            ),
        )
        if bad
    ]
    if undefined:
        message = f"Eq. 1 is undefined: {'; '.join(undefined)} (alpha={alpha:.3f}, beta={beta:.3f}, gamma={gamma:.3f})"
        if strict:
            raise ValueError(message)
        return Ratio(1.0, None, message + "; kept every predicted hallucination (R = 1, no subsampling)")
    numerator = -2 * alpha * beta * gamma + alpha * beta + beta * gamma + alpha * gamma - gamma
    raw = numerator / ((2 * gamma - 1) * alpha * (1 - beta))
    value = float(min(1.0, max(0.0, raw)))
    why = (
        "keeping every predicted hallucination leaves H the minority"
        if raw > 1
        else "dropping every predicted hallucination leaves H the majority"
    )
    message = "" if value == raw else f"Eq. 1 gave R = {raw:.3f}, clipped to {value:.0f}: even {why}"
    return Ratio(value, float(raw), message)


def detector_rates(y_true, y_pred) -> dict:
    """TPR alpha, TNR beta, precision gamma and the false-omission rate from held-out judgments."""
    y_true, y_pred = np.asarray(y_true, dtype=int), np.asarray(y_pred, dtype=int)
    tp = int(((y_true == 1) & (y_pred == 1)).sum())
    fn = int(((y_true == 1) & (y_pred == 0)).sum())
    tn = int(((y_true == 0) & (y_pred == 0)).sum())
    fp = int(((y_true == 0) & (y_pred == 1)).sum())

    def share(a: int, b: int) -> float:
        return a / (a + b) if a + b else 0.0

    return {
        "alpha": share(tp, fn),
        "beta": share(tn, fp),
        "gamma": share(tp, fp),
        "false_omission": share(fn, tn),
        "tp": tp,
        "fn": fn,
        "tn": tn,
        "fp": fp,
    }
