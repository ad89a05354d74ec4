"""The paper's feature detectors: logistic regression and a linear SVM over scaled span features.

Both are ``SGDClassifier`` in a ``Pipeline`` with a ``StandardScaler``: at most 100 passes, stopping
once the training loss has not dropped by ``tol`` for 5 passes in a row (the paper's criterion,
which ``LogisticRegression``/``LinearSVC`` cannot express: their ``tol`` is on the gradient).
SVM p(H) is Platt's sigmoid fit on cross-validated decision values. The paper (§4) names LR and SVM
only: ``SGDClassifier``, the scaler, Platt scaling and the balanced class weights are our reading (the
README's deviations list them).

A linear model is a handful of numbers, so it is saved as JSON (no pickle, nothing to trust):
scaler mean/scale, coefficients, intercept and the sigmoid's slope and offset.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np

from hades_ray.pipeline import storage


def _pipeline(kind: str, d, seed: int):
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    clf = SGDClassifier(
        loss="log_loss" if kind == "lr" else "hinge",
        max_iter=d.linear_max_iter,
        n_iter_no_change=d.linear_n_iter_no_change,
        tol=d.linear_tol,
        random_state=seed,
        class_weight="balanced" if d.class_weighting == "balanced" else None,
    )
    return Pipeline([("scale", StandardScaler()), ("clf", clf)])


def _platt(kind: str, X: np.ndarray, y: np.ndarray, d, seed: int) -> tuple[float, float]:
    """Slope and offset mapping the decision value to p(H)."""
    if kind == "lr":
        return 1.0, 0.0  # the logistic model's own sigmoid
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    folds = min(d.svm_calibration_folds, int(np.bincount(y, minlength=2).min()))
    if folds < 2:
        return 1.0, 0.0  # too few of one class to calibrate: plain sigmoid of the margin
    cv = StratifiedKFold(folds, shuffle=True, random_state=seed)
    decision = cross_val_predict(_pipeline(kind, d, seed), X, y, cv=cv, method="decision_function")
    sigmoid = LogisticRegression().fit(decision.reshape(-1, 1), y)
    return float(sigmoid.coef_[0, 0]), float(sigmoid.intercept_[0])


def fit_linear(kind: str, X: np.ndarray, y: np.ndarray, d, seed: int, feature_names: list[str]) -> dict:
    """Train LR or SVM; returns the JSON-ready parameters ``predict_linear`` uses."""
    from sklearn.exceptions import ConvergenceWarning

    y = np.asarray(y, dtype=int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # hitting 100 passes is the paper's limit
        pipe = _pipeline(kind, d, seed).fit(X, y)
        slope, offset = _platt(kind, X, y, d, seed)
    scale, clf = pipe.named_steps["scale"], pipe.named_steps["clf"]
    return {
        "kind": kind,
        "features": list(feature_names),
        "mean": scale.mean_.tolist(),
        "scale": scale.scale_.tolist(),
        "coef": clf.coef_[0].tolist(),
        "intercept": float(clf.intercept_[0]),
        "sigmoid": [slope, offset],
        "iterations": int(clf.n_iter_),
    }


def predict_linear(params: dict, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(p(H), predicted label); the label is the classifier's own decision (margin > 0)."""
    z = (np.asarray(X, dtype=float) - np.array(params["mean"])) / np.array(params["scale"])
    decision = z @ np.array(params["coef"]) + params["intercept"]
    slope, offset = params["sigmoid"]
    p = 1.0 / (1.0 + np.exp(-(slope * decision + offset)))
    return p, (decision > 0).astype(int)


def save_linear(params: dict, directory: str | Path) -> Path:
    path = Path(directory) / "linear.json"
    storage.write(path, json.dumps(params, indent=2) + "\n")
    return path


def load_linear(directory: str | Path) -> dict:
    return json.loads((Path(directory) / "linear.json").read_text(encoding="utf-8"))
