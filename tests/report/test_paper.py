"""The report sets every figure the paper gives beside ours: the paper's value, ours, the gap, and
whose labels ours rest on (SIMULATED judges are marked)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hades_ray.report import paper_figures
from hades_ray.report.build import build_report
from hades_ray.report.paper import paper_rows
from tests.report.test_report import make_dataset, make_predictions, make_workdir


# Every figure of Tables 2 and 3 as printed (Acc, G-Mean, BSS, AUC, N P/R/F1, H P/R/F1; None: "–").
PRINTED = {
    "offline": {
        "LR": (62.25, 60.77, None, None, 62.35, 72.08, 66.86, 62.10, 51.24, 60.33),
        "SVM": (63.67, 61.50, None, None, 62.89, 76.18, 68.90, 65.05, 49.65, 56.31),
        "BERT": (71.92, 71.95, 19.06, 78.63, 74.46, 71.29, 72.84, 69.31, 72.61, 70.92),
        "RoBERTa": (72.83, 70.94, 18.78, 78.72, 74.06, 74.76, 74.41, 71.43, 70.67, 71.05),
        "XLNet": (72.33, 71.39, 18.79, 78.93, 71.15, 80.13, 75.37, 74.07, 63.60, 68.44),
    },
    "online": {
        "GPT-2": (71.58, 70.98, 19.13, 77.71, 71.32, 77.29, 74.19, 71.93, 65.19, 68.40),
        "BERT": (71.00, 70.43, 18.66, 78.83, 70.91, 76.50, 73.60, 71.12, 64.84, 67.84),
        "RoBERTa": (70.67, 70.14, 19.77, 77.07, 70.74, 75.87, 73.22, 70.58, 64.84, 67.59),
        "XLNet": (70.08, 69.17, 19.76, 76.59, 69.39, 77.60, 73.27, 71.08, 61.66, 66.04),
    },
}


def test_every_printed_figure_of_tables_2_and_3_is_kept():
    for mode, rows in PRINTED.items():
        kept = paper_figures.TABLES[mode][1]
        assert list(kept) == list(rows)  # no offline GPT-2: "GPT-2 can only fit in the online setting"
        for row, values in rows.items():
            assert kept[row] == {k: v for k, v in zip(paper_figures.METRIC_KEYS, values) if v is not None}
    assert {f.key: f.value for f in paper_figures.ANNOTATION} == {
        "share_consensus": 86.12, "share_agreement_80": 78.47, "share_agreement_100": 71.24,
        "krippendorff_alpha": 0.87, "share_h": 54.5, "share_n": 45.5,
    }  # fmt: skip
    assert {f.key: f.value for f in paper_figures.ROUNDS} == {
        "rounds": 14, "annotated": 12_719, "consensus": 10_954, "hits": 71_226
    }  # fmt: skip
    assert paper_figures.TABLE_1["mlm_entropy"] == {"H": (2.58, 1.49), "N": (1.78, 1.07)}


def test_the_consistency_check_flags_the_two_printed_slips_ppmis_two_stds_and_the_hits():
    notes = paper_figures.inconsistencies()
    assert len(notes) == 4, notes
    lr, roberta, ppmi, hits = notes
    assert "Table 2 (LR)" in lr and "hallucination F1 of 60.33" in lr and "56.15" in lr
    assert "Table 2 (RoBERTa)" in roberta and "G-Mean of 70.94" in roberta and "72.69" in roberta
    assert "Table 4's All row gives PPMI H std 0.144, Table 1 0.134" == ppmi
    assert "71,226 HITs exceed the 58,192 judgments" in hits


def test_table_4_holds_only_what_can_be_checked_and_table_1b_nothing():
    held = [v for f in paper_figures.TABLE_4.values() for by in f.values() for p in by.values() for v in p if v]
    assert held == [0.144] and paper_figures.TABLE_4_PRINTED == 144
    assert set(paper_figures.TABLE_1B) == set(paper_figures.TABLE_1) and not any(paper_figures.TABLE_1B.values())
    words = {f.key: f.words for f in paper_figures.TEXT_FIGURES}
    assert words == {"verbs_n": "about two-thirds of verbs N", "spans_not_entities": "about 90% of spans not entities",
                     "entities_h": "over 90% of entities H", "early_rounds_h": "~90% H", "pool": "~1M"}  # fmt: skip


def test_the_hits_are_checked_against_the_most_judgments_the_panels_allow(monkeypatch):
    figures = [paper_figures.Figure(f.key, f.label, 58_192 if f.key == "hits" else f.value, f.unit)
               for f in paper_figures.ROUNDS]  # fmt: skip
    monkeypatch.setattr(paper_figures, "ROUNDS", tuple(figures))
    assert not any("HITs" in note for note in paper_figures.inconsistencies())  # 9,061 x 4 + 3,658 x 6


@pytest.mark.parametrize("mode,row,key", [("offline", "BERT", "accuracy"), ("online", "XLNet", "n_precision"),
                                          ("online", "GPT-2", "h_recall"), ("offline", "SVM", "n_f1")])  # fmt: skip
def test_the_consistency_check_catches_a_figure_off_by_five_hundredths(monkeypatch, mode, row, key):
    baseline = paper_figures.inconsistencies()
    figures = dict(paper_figures.TABLES[mode][1][row])
    figures[key] += 0.05
    monkeypatch.setitem(paper_figures.TABLES[mode][1], row, figures)
    new = [note for note in paper_figures.inconsistencies() if note not in baseline]
    assert new and all(f"({row})" in note for note in new)  # the figure, or one it determines, is named


def test_the_split_and_the_shares_follow_from_the_counts(monkeypatch):
    monkeypatch.setitem(paper_figures.SPLIT, "train", 8_753)
    (note,) = [n for n in paper_figures.inconsistencies() if "split" in n]
    assert "10953" in note and "10954" in note


def test_detectors_are_set_beside_the_row_of_their_kind_mode_and_backbone_family():
    assert [r[:2] for r in paper_rows("transformer", "offline", "bert")] == [("Table 2", "BERT")]
    assert [r[:2] for r in paper_rows("transformer", "offline", "roberta")] == [("Table 2", "RoBERTa")]
    assert [r[:2] for r in paper_rows("transformer", "online", "xlnet")] == [("Table 3", "XLNet")]
    assert [r[:2] for r in paper_rows("transformer", "online", "gpt2")] == [("Table 3", "GPT-2")]
    assert paper_rows("transformer", "offline", "gpt2") == []  # "GPT-2 can only fit in the online setting"
    assert paper_rows("transformer", "offline", "deberta-v2") == []  # no paper row of that family
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
    # The work directory's rule (local: 3-1 of 4) cannot give the paper's shares: no judgment count for them.
    assert any("cannot give the paper's three agreement shares" in note for note in section["notes"])
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "figures beside ours" in markdown and "| 86.12 | 75.00 | -11.12 |" in markdown


def test_the_hits_are_set_beside_the_judgments_our_rule_implies():
    from hades_ray.config import load_config
    from hades_ray.report.paper import annotation_table, rule_judgments, rule_note

    rule = rule_judgments(load_config(preset="paper").annotate)
    assert rule == {"rule": "panel (min_agree_first 4)", "fits": True, "judgments": 58_192, "most": 58_192}
    row = annotation_table({"labels": "people", "rule": rule}).rows[-1]
    assert row[0].startswith("HITs: the judgments our rule implies") and row[2:5] == ["71226", "58192", "-13034"]
    note = rule_note(rule)
    assert "58,192 judgments" in note and "71,226 HITs" in note and "5.60 per item" in note


@pytest.mark.parametrize(
    "model_type,mode,row",
    [("roberta", "offline", "Table 2 RoBERTa"), ("gpt2", "offline", None), ("xlnet", "online", "Table 3 XLNet")],
)
def test_a_detector_folder_is_set_beside_its_backbones_family(tmp_path, model_type, mode, row):
    """The family comes from the backbone's config.json, as a trained detector folder names it."""
    from hades_ray.report.paper import detector_kinds, detector_table

    backbone = tmp_path / "backbone"
    backbone.mkdir()
    (backbone / "config.json").write_text(json.dumps({"model_type": model_type}))
    folder = tmp_path / "detector"
    folder.mkdir()
    (folder / "detector.json").write_text(json.dumps({
        "type": "transformer", "format": "hades_ray.span_classifier/1", "backbone": str(backbone), "mode": mode,
        "window": 160, "pooling": "max", "mlp_layers": 2, "freeze": "all"}))  # fmt: skip
    kinds = detector_kinds([f"ours={folder}"])
    assert kinds == {"ours": ("transformer", mode, model_type)}
    rows = detector_table({"ours": {"accuracy": 0.7}}, kinds, "people").rows
    assert {r[0].rsplit(" ", 1)[0] for r in rows} == ({row} if row else set())


def test_table_4_groups_the_features_by_tag_and_marks_what_is_missing():
    from hades_ray.report.paper_text import table_4, table_4_numbers

    labels = np.array([1, 1, 0, 1, 0])
    values = {"ppmi": np.array([0.1, 0.3, 0.2, 0.5, 0.4])}
    tags = [("NOUN", ""), ("NOUN", "PERSON"), ("NOUN", ""), ("VERB", "PERSON"), ("VERB", "")]
    numbers = table_4_numbers(values, labels, tags)
    assert list(numbers) == ["All", "POS NOUN", "POS VERB", "NER none", "NER PERSON"]
    assert numbers["POS NOUN"]["ppmi"]["H"] == pytest.approx((0.2, 0.1414, 2), abs=1e-4)
    rows = {r[0]: r for r in table_4(numbers, "tags.json").rows}
    assert rows["All"][2:4] == ["? (0.144)", "0.3 (0.2)"]  # the paper's one held figure beside ours
    assert rows["POS VERB"][3] == "0.5 (–)" and rows["NER PERSON"][5] == "–"  # one H verb; no N person
    assert rows["POS NOUN"][2] == rows["POS NOUN"][4] == "not held"
