"""Eq. 1 against hand computations: after subsampling, expected true H equals true N."""

import math

import pytest

from hades_ray.select.ratio import explain_ratio, subsampling_ratio
from hades_ray.select.ratio import detector_rates


def rates_for(h, n, alpha, beta):
    tp, fp = alpha * h, (1 - beta) * n
    return alpha, beta, tp / (tp + fp)


@pytest.mark.parametrize("h,n,alpha,beta", [(100, 50, 0.8, 0.7), (300, 100, 0.9, 0.6), (150, 100, 0.8, 0.7)])
def test_balance_after_subsampling(h, n, alpha, beta):
    a, b, g = rates_for(h, n, alpha, beta)
    r = subsampling_ratio(a, b, g)
    assert 0 < r < 1
    kept_h = r * a * h + (1 - a) * h
    kept_n = r * (1 - b) * n + b * n
    assert math.isclose(kept_h, kept_n, rel_tol=1e-9)


def test_hand_computed_value():
    # alpha=0.8, beta=0.7, h=100, n=50: gamma=80/95; numerator and denominator of Eq. 1 by hand.
    a, b, g = 0.8, 0.7, 80 / 95
    num = -2 * a * b * g + a * b + b * g + a * g - g
    den = (2 * g - 1) * a * (1 - b)
    assert math.isclose(subsampling_ratio(a, b, g), num / den)
    assert math.isclose(num / den, 3 / 13)  # 100(0.8R + 0.2) = 50(0.3R + 0.7) -> 65R = 15


def test_clipped_and_explained():
    info = explain_ratio(0.8, 0.7, rates_for(100, 300, 0.8, 0.7)[2])
    assert info.value == 0.0 and info.raw < 0 and "clipped" in info.message


@pytest.mark.parametrize(
    "a,b,g,why",
    [
        (0.7, 0.6, 0.5, "gamma = 1/2"),
        (0.7, 1.0, 0.9, "beta = 1"),
        (0.0, 0.6, 0.9, "alpha = 0"),
        (1.0, 0.0, 0.46, "predicts H for everything"),
    ],
)
def test_undefined(a, b, g, why):
    with pytest.raises(ValueError, match=why):
        subsampling_ratio(a, b, g)
    info = explain_ratio(a, b, g)
    assert info.value == 1.0 and info.raw is None and "R = 1" in info.message


def test_detector_rates():
    rates = detector_rates([1, 1, 1, 0, 0], [1, 0, 1, 1, 0])
    assert (rates["alpha"], rates["beta"], rates["gamma"]) == (2 / 3, 0.5, 2 / 3)
