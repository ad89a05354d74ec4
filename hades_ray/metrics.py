"""The paper's evaluation (§5; HaDes' released scripts): accuracy, per-class P/R/F1, G-Mean, BSS, AUC.

All from scikit-learn; H (hallucination) is label 1. Values are fractions; the Markdown table
shows percentages, laid out like the paper's Tables 2-3.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import numpy as np
from sklearn.metrics import (
    accuracy_score,
    brier_score_loss,
    confusion_matrix,
    precision_recall_fscore_support,
    roc_auc_score,
)

from hades_ray.markdown import pipe_table
from hades_ray.pipeline import storage

log = logging.getLogger(__name__)

KEYS = ("accuracy", "h_precision", "h_recall", "h_f1", "n_precision", "n_recall", "n_f1", "gmean", "bss", "auc")


def binary_metrics(y_true, y_pred, p_hallucination) -> dict[str, float]:
    """Metrics of binary predictions and p(H); degenerate inputs give NaN (with a warning), not a crash."""
    y_true = np.asarray(y_true, dtype=int)
    y_pred = np.asarray(y_pred, dtype=int)
    p = np.asarray(p_hallucination, dtype=float)
    if y_true.size == 0:
        log.warning("no labelled instances: every metric is NaN")
        return {key: math.nan for key in KEYS} | {"n": 0}
    precision, recall, f1, _ = precision_recall_fscore_support(
        y_true, y_pred, labels=[0, 1], average=None, zero_division=0
    )
    tn, fp, fn, tp = confusion_matrix(y_true, y_pred, labels=[0, 1]).ravel()
    sensitivity = tp / (tp + fn) if tp + fn else math.nan
    specificity = tn / (tn + fp) if tn + fp else math.nan
    if len(np.unique(y_true)) < 2:
        log.warning("only one class among %d labels: AUC and G-Mean are undefined (NaN)", y_true.size)
        auc = math.nan
    else:
        auc = float(roc_auc_score(y_true, p))
    return {
        "accuracy": float(accuracy_score(y_true, y_pred)),
        "h_precision": float(precision[1]),
        "h_recall": float(recall[1]),
        "h_f1": float(f1[1]),
        "n_precision": float(precision[0]),
        "n_recall": float(recall[0]),
        "n_f1": float(f1[0]),
        "gmean": float(math.sqrt(sensitivity * specificity)),
        "bss": float(brier_score_loss(y_true, p, pos_label=1)),
        "auc": auc,
        "n": int(y_true.size),
    }


def _pct(value: float) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{100 * value:.2f}"


COLUMNS = ("Model", "Acc", "G-Mean", "BSS", "AUC", "N-P", "N-R", "N-F1", "H-P", "H-R", "H-F1")
TABLE_KEYS = ("accuracy", "gmean", "bss", "auc", "n_precision", "n_recall", "n_f1", "h_precision", "h_recall", "h_f1")


def markdown_table(rows: dict[str, dict[str, float]]) -> str:
    """One row per model, columns as in the paper's Tables 2-3 (percentages; BSS lower is better)."""
    cells = ([name, *(_pct(m.get(k, math.nan)) for k in TABLE_KEYS)] for name, m in rows.items())
    return "\n".join(pipe_table(COLUMNS, cells)) + "\n"


def write_metrics(metrics: dict, directory: str | Path, name: str = "model") -> Path:
    """``metrics.json`` (NaN written as null) and ``metrics.md`` beside a model or an evaluation."""
    directory = Path(directory)
    clean = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in metrics.items()}
    path = directory / "metrics.json"
    storage.write(path, json.dumps(clean, indent=2) + "\n")
    storage.write(directory / "metrics.md", markdown_table({name: metrics}))
    return path
