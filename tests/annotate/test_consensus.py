"""Consensus with 4 and 6 judges, agreement shares and Krippendorff's alpha."""

import numpy as np
import pandas as pd
import pytest

from hades_ray.annotate.consensus import (
    agreement_report,
    item_status,
    item_table,
    judges_needed,
    krippendorff_alpha,
)
from hades_ray.config import load_config


@pytest.mark.parametrize(
    "h,n,expected",
    [
        (2, 0, ("pending", None)),
        (4, 0, ("consensus", 1)),
        (3, 1, ("consensus", 1)),
        (1, 3, ("consensus", 0)),
        (2, 2, ("needs_more", None)),
        (3, 2, ("needs_more", None)),
        (4, 1, ("consensus", 1)),
        (4, 2, ("consensus", 1)),
        (2, 4, ("consensus", 0)),
        (3, 3, ("no_consensus", None)),
        (5, 1, ("consensus", 1)),
    ],
)
def test_rules(h, n, expected):
    assert item_status(h, n) == expected


def test_next_export_asks_for_exactly_the_missing_judges():
    assert judges_needed("pending", 0) == 4 and judges_needed("pending", 3) == 1
    assert judges_needed("needs_more", 4) == 2 and judges_needed("needs_more", 5) == 1
    assert judges_needed("consensus", 4) == 0 and judges_needed("no_consensus", 6) == 0


def test_item_table_and_report():
    cfg = load_config().annotate
    rows = [("a", f"j{i}", "H") for i in range(4)] + [
        ("b", "j0", "H"),
        ("b", "j1", "H"),
        ("b", "j2", "N"),
        ("b", "j3", "N"),
        ("c", "j0", "N"),
    ]
    table = item_table(["a", "b", "c"], pd.DataFrame(rows, columns=["item_id", "judge_id", "label"]), cfg)
    assert list(table["status"]) == ["consensus", "needs_more", "pending"]
    assert list(table["needed"]) == [0, 2, 3]
    report = agreement_report(table)
    assert report["judged"] == 2 and report["share_consensus"] == 0.5 and report["share_agreement_100"] == 0.5


def test_alpha_matches_the_package_readme_example():
    import krippendorff

    data = np.array(
        [
            [np.nan, np.nan, np.nan, np.nan, np.nan, 3, 4, 1, 2, 1, 1, 3, 3, np.nan, 3],
            [1, np.nan, 2, 1, 3, 3, 4, 3, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan],
            [np.nan, np.nan, 2, 1, 3, 4, 4, np.nan, 2, 1, 1, 3, 3, np.nan, 4],
        ]
    )
    counts = np.array([[int((data[:, u] == v).sum()) for v in (1, 2, 3, 4)] for u in range(data.shape[1])])
    assert round(krippendorff_alpha(counts), 6) == 0.691358
    assert round(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"), 6) == 0.691358
    assert krippendorff_alpha(np.array([[4, 0], [4, 0]])) is None  # one category only: undefined
