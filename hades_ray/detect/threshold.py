"""The decision threshold a detector flags words at, chosen on validation data when it is trained.

The paper does not say at which threshold its metrics are taken; ``evaluate``/``predict`` report them at
the classifier's argmax (p >= 0.5), our reading, so their numbers stay comparable across detectors. A
class-weighted detector's probabilities are not calibrated, though, so ``hades-ray score`` and the guard
flag at the threshold that maximises the G-Mean (the paper's balanced metric) on the validation set,
stored in ``detector.json``
(``hades_ray/detect/detector.py`` reads and writes it).
"""

from __future__ import annotations

import numpy as np

DEFAULT_THRESHOLD = 0.5  # detectors trained before thresholds were stored: the argmax


def choose_threshold(labels, p) -> dict:
    """The threshold with the highest G-Mean on ``labels`` (0/1) and ``p`` (p(H)), and that G-Mean.
    A validation set with one class cannot choose: the default, said in ``chosen_by``."""
    from sklearn.metrics import roc_curve

    labels, p = np.asarray(labels, dtype=int), np.asarray(p, dtype=float)
    if len(set(labels.tolist())) < 2:
        return {"threshold": DEFAULT_THRESHOLD, "chosen_by": "default (validation set has one class)"}
    fpr, tpr, thresholds = roc_curve(labels, p)
    gmean = np.sqrt(tpr * (1.0 - fpr))
    finite = np.isfinite(thresholds)
    best = int(np.argmax(np.where(finite, gmean, -1.0)))
    return {
        "threshold": float(min(1.0, thresholds[best])),
        "chosen_by": "max G-Mean on validation",
        "valid_gmean": float(gmean[best]),
        "valid_n": int(labels.size),
    }
