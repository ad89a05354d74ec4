"""Consensus with 4 and 6 judges, agreement shares and Krippendorff's alpha."""

import numpy as np
import pandas as pd
import pytest

from hades_ray.pool.consensus import (
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


def _panels(counts: dict[tuple[int, int], int]) -> tuple[list[str], pd.DataFrame]:
    """Items with the given final (majority, minority) vote counts, alternating which label is the majority."""
    items, rows = [], []
    for (top, low), n in counts.items():
        for k in range(n):
            item = f"{top}-{low}-{k}"
            major, minor = ("H", "N") if k % 2 else ("N", "H")
            items.append(item)
            rows += [(item, f"j{j}", major) for j in range(top)] + [(item, f"j{top + j}", minor) for j in range(low)]
    return items, pd.DataFrame(rows, columns=["item_id", "judge_id", "label"])


def test_the_paper_preset_rule_gives_the_papers_three_shares():
    """A first panel of 4 that is not unanimous gets 2 more judges, and consensus needs at least 4 of 6:
    71.24% unanimous, 78.47% with at least 80% agreement (5/6), 86.12% with consensus (4/6 or better)."""
    items, judgments = _panels({(4, 0): 7124, (5, 1): 723, (4, 2): 765, (3, 3): 1388})
    paper = agreement_report(item_table(items, judgments, load_config(preset="paper").annotate))
    assert (paper["share_agreement_100"], paper["share_agreement_80"], paper["share_consensus"]) == (
        0.7124,
        0.7847,
        0.8612,
    )
    assert paper["needs_more"] == 0 and paper["pending"] == 0
    # Where 3-1 of 4 is already consensus, a first panel of 3-1 stops at 75%: nothing lands between 80% and
    # 100% but what a tie sends on, so the paper's 78.47% cannot come from it.
    first_panels, judgments = _panels({(4, 0): 7124, (3, 1): 1488, (2, 2): 1388})
    local = agreement_report(item_table(first_panels, judgments, load_config(preset="local").annotate))
    assert local["share_agreement_80"] == local["share_agreement_100"] == 0.7124
    assert load_config(preset="paper").annotate.min_agree_first == 4


@pytest.mark.parametrize(
    "h,n,expected,needed",
    [
        (4, 0, ("consensus", 1), 0),
        (3, 1, ("needs_more", None), 1),
        (2, 2, ("needs_more", None), 2),
        (4, 1, ("consensus", 1), 0),
        (2, 3, ("needs_more", None), 1),
        (4, 2, ("consensus", 1), 0),
        (3, 3, ("no_consensus", None), 0),
    ],
)
def test_stepwise_asks_one_judge_at_a_time_until_four_agree(h, n, expected, needed):
    status = item_status(h, n, min_agree_first=4, rule="stepwise")
    assert status == expected
    assert judges_needed(status[0], h + n, rule="stepwise", top=max(h, n), min_agree_first=4) == needed


def test_the_stepwise_rule_drives_the_next_export():
    cfg = load_config(preset="paper", overrides=["annotate.consensus_rule=stepwise"]).annotate
    items, judgments = _panels({(3, 1): 1, (4, 1): 1, (2, 2): 1})
    table = item_table(items, judgments, cfg)
    assert list(table["status"]) == ["needs_more", "consensus", "needs_more"]
    assert list(table["needed"]) == [1, 0, 2]


@pytest.mark.parametrize(
    "overrides,judgments,endings",
    [
        ([], 58_192, {"full agreement": [4, 0], ">= 80% agreement": [5, 1], "consensus under 80%": [4, 2]}),
        (["annotate.consensus_rule=stepwise"], 57_272, {">= 80% agreement": [4, 1]}),
    ],
)
def test_two_rules_rebuild_the_papers_three_shares(overrides, judgments, endings):
    """Both fit 71.24 / 78.47 / 86.12 on the paper's 12,719 items; neither comes near its 71,226 HITs."""
    from hades_ray.annotate.rules import most_judgments, rebuild_shares

    cfg = load_config(preset="paper", overrides=overrides).annotate
    result = rebuild_shares(cfg, 12_719, 71.24, 78.47, 86.12)
    assert result["fits"]
    assert {k: round(v, 2) for k, v in result["shares"].items()} == {
        "share_agreement_100": 71.24, "share_agreement_80": 78.47, "share_consensus": 86.12}  # fmt: skip
    assert result["judgments"] == judgments and most_judgments(cfg, 12_719, 71.24) == 58_192 < 71_226
    assert all(result["chosen"][band] == ending for band, ending in endings.items())


def test_the_default_rule_cannot_give_the_papers_80_percent_share():
    from hades_ray.annotate.rules import rebuild_shares

    result = rebuild_shares(load_config(preset="local").annotate, 12_719, 71.24, 78.47, 86.12)
    assert not result["fits"] and result["unreachable"] == [">= 80% agreement"]


def test_annotations_shares_command(capsys):
    from hades_ray.cli import main

    assert main(["annotations", "shares", "--preset", "paper", "--rule", "stepwise"]) == 0
    out = capsys.readouterr().out
    assert "rule: stepwise" in out and "920 of the paper's 12719 items; the rule's endings there: 4-1" in out
    assert "consensus: 86.12% (the paper: 86.12%)" in out and "judgments: 57,272" in out and "71,226 HITs" in out
    assert main(["annotations", "shares"]) == 1  # local's 3-1 rule
    assert "cannot end in >= 80% agreement" in capsys.readouterr().out
