"""The report sets every figure the paper gives beside ours: the paper's value, ours, the gap, and
whose labels ours rest on (SIMULATED judges are marked)."""

from __future__ import annotations

import json

import numpy as np

from hades_ray.report import paper_figures
from hades_ray.report.build import build_report
from hades_ray.report.paper import paper_rows
from tests.report.test_report import make_dataset, make_predictions, make_workdir


def test_the_papers_figures_are_kept_once_with_the_issue_values():
    assert paper_figures.TABLE_2_OFFLINE["BERT"] == {"accuracy": 71.92, "gmean": 71.95, "bss": 19.06, "auc": 78.63}
    assert paper_figures.TABLE_3_ONLINE["GPT-2"] == {"accuracy": 71.58, "gmean": 70.98, "bss": 19.13, "auc": 77.71}
    assert {f.key: f.value for f in paper_figures.ANNOTATION} == {
        "share_consensus": 86.12, "share_agreement_80": 78.47, "share_agreement_100": 71.24,
        "krippendorff_alpha": 0.87, "share_h": 54.5, "share_n": 45.5,
    }  # fmt: skip
    (note,) = paper_figures.inconsistencies()  # LR's F1 is the one that does not follow from its P and R
    assert "LR" in note and "60.33" in note and "56.15" in note


def test_detectors_are_set_beside_the_row_of_their_kind_and_mode():
    assert [r[:2] for r in paper_rows("transformer", "offline")] == [("Table 2", "BERT")]
    assert [r[:2] for r in paper_rows("transformer", "online")] == [("Table 3", "GPT-2")]
    assert [r[:2] for r in paper_rows("lr", "offline")] == [("Table 2", "LR")]
    assert [r[:2] for r in paper_rows(None, None)] == [("Table 2", "BERT"), ("Table 3", "GPT-2")]


def test_report_shows_paper_ours_gap_and_marks_simulated_labels(tmp_path):
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 40)
    p = np.clip(0.25 + 0.5 * labels + rng.normal(0, 0.2, 40), 0, 1)
    predictions = make_predictions(tmp_path / "good.jsonl", labels, p)
    result = build_report(tmp_path / "out", workdir=make_workdir(tmp_path / "wd"),
                          dataset=make_dataset(tmp_path / "dataset"), detectors=[f"good={predictions}"])  # fmt: skip
    assert result["sections"][-1] == "paper"
    section = json.loads(result["paths"]["json"].read_text())["sections"]["paper"]
    annotation = {row[0]: row for row in section["tables"][1]["rows"]}
    # Round 0's four judged items: three reach consensus (75%), two are unanimous (50%), two H and one N.
    consensus = annotation["items with a consensus label"]
    assert consensus[2:] == ["86.12", "75.00", "-11.12", "SIMULATED judges (rounds 0)"]
    assert annotation["items with full agreement"][2:5] == ["71.24", "50.00", "-21.24"]
    assert annotation["hallucination (H) share of the labels"][2:5] == ["54.50", "66.67", "12.17"]
    assert annotation["selection rounds"][2:5] == ["14", "2", "-12"]
    assert section["numbers"]["annotation"]["labels"].startswith("SIMULATED")
    detectors = {row[0]: row for row in section["tables"][0]["rows"]}
    ours = 100 * (((p >= 0.5) == labels).mean())
    accuracy = detectors["Table 2 BERT Acc"]
    assert accuracy[1:5] == ["good", "71.92", f"{ours:.2f}", f"{ours - 71.92:.2f}"]
    assert accuracy[5] == "the predictions file's own labels"
    assert "Table 3 GPT-2 AUC" in detectors  # a predictions file has no mode: beside both headline rows
    assert any("SIMULATED" in note for note in section["notes"])
    assert any("60.33" in note and "56.15" in note for note in section["notes"])
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "figures beside ours" in markdown and "| 86.12 | 75.00 | -11.12 |" in markdown
