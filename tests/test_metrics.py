"""binary_metrics against hand-computed values, and its degenerate cases."""

from __future__ import annotations

import math

import pytest

from hades_ray.metrics import binary_metrics, markdown_table


def test_hand_computed_values():
    # TP=2 (rows 0,1), FN=1 (row 2), TN=2 (rows 3,4), FP=1 (row 5)
    y = [1, 1, 1, 0, 0, 0]
    pred = [1, 1, 0, 0, 0, 1]
    p = [0.9, 0.8, 0.4, 0.1, 0.3, 0.6]
    m = binary_metrics(y, pred, p)
    assert m["accuracy"] == pytest.approx(4 / 6)
    assert m["h_precision"] == pytest.approx(2 / 3) and m["h_recall"] == pytest.approx(2 / 3)
    assert m["n_precision"] == pytest.approx(2 / 3) and m["n_recall"] == pytest.approx(2 / 3)
    assert m["h_f1"] == pytest.approx(2 / 3) and m["n_f1"] == pytest.approx(2 / 3)
    assert m["gmean"] == pytest.approx(math.sqrt(2 / 3 * 2 / 3))
    brier = sum((pi - yi) ** 2 for pi, yi in zip(p, y)) / 6
    assert m["bss"] == pytest.approx(brier)
    # positives 0.9, 0.8, 0.4 vs negatives 0.1, 0.3, 0.6: 8 of 9 pairs ordered right
    assert m["auc"] == pytest.approx(8 / 9)


def test_asymmetric_counts():
    m = binary_metrics([1, 0, 0, 0], [1, 1, 0, 0], [0.7, 0.6, 0.2, 0.1])
    assert m["h_precision"] == pytest.approx(0.5) and m["h_recall"] == 1.0
    assert m["n_recall"] == pytest.approx(2 / 3) and m["gmean"] == pytest.approx(math.sqrt(2 / 3))
    assert m["auc"] == 1.0


def test_one_class_gives_nan_auc_with_a_warning(caplog):
    m = binary_metrics([1, 1, 1], [1, 0, 1], [0.9, 0.2, 0.7])
    assert math.isnan(m["auc"]) and math.isnan(m["gmean"])
    assert m["h_recall"] == pytest.approx(2 / 3) and m["n_precision"] == 0.0
    assert "one class" in caplog.text


def test_empty_input_and_table():
    assert math.isnan(binary_metrics([], [], [])["accuracy"])
    table = markdown_table({"lr": binary_metrics([1, 0], [1, 0], [0.8, 0.3])})
    assert "| lr | 100.00 | 100.00 | " in table and "G-Mean" in table
