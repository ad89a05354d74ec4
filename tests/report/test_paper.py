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


def test_the_consistency_check_flags_the_printed_slips_ppmis_two_stds_and_the_hits():
    notes = paper_figures.inconsistencies()
    assert len(notes) == 6, notes
    lr, roberta, ppmi, pos, ner, hits = notes
    assert "Table 2 (LR)" in lr and "hallucination F1 of 60.33" in lr and "56.15" in lr
    assert "Table 2 (RoBERTa)" in roberta and "G-Mean of 70.94" in roberta and "72.69" in roberta
    assert "Table 4's All row gives PPMI H std 0.144, Table 1 0.134" == ppmi
    # The NER rows mix into every All figure but .144, and the std they give holds Table 1's .134.
    assert "NER rows" in ner and "leaving out PPMI H std 0.144 they do" in ner and "0.133 to 0.137" in ner
    # The POS rows miss the All row's PPMI H too, and the std they give holds neither .144 nor .134.
    assert "POS rows" in pos and "PPMI H mean 0.198 or PPMI H std 0.144" in pos and "0.123 to 0.132" in pos
    assert "71,226 HITs exceed the 58,192 judgments" in hits


def test_every_printed_cell_of_table_4_parses_with_the_half_unit_of_its_digits():
    from hades_ray.report import paper_table_4

    def flat(cell):
        (mean, std), (half_mean, half_std) = cell
        return [mean, std, half_mean, half_std]

    assert flat(paper_table_4.parse_cell("14.3_33.6", 1e-8)) == pytest.approx([14.3e-8, 33.6e-8, 0.05e-8, 0.05e-8])
    assert flat(paper_table_4.parse_cell(".019_0.014")) == pytest.approx([0.019, 0.014, 0.0005, 0.0005])
    assert flat(paper_table_4.parse_cell("0.69_2.89")) == pytest.approx([0.69, 2.89, 0.005, 0.005])
    figures = [v for row in paper_figures.TABLE_4.values() for by in row.values() for pair in by.values() for v in pair]
    assert len(figures) == paper_figures.TABLE_4_PRINTED == 144 and all(v > 0 for v in figures)
    assert list(paper_figures.TABLE_4) == ["POS:NOUN", "POS:VERB", "POS:ADJ", "POS:ADV", "POS:PROPN", "POS:other",
                                           "NER:null", "NER:other", "All"]  # fmt: skip
    assert paper_figures.TABLE_4["POS:PROPN"]["mlm_prob"]["H"] == pytest.approx((14.3e-8, 33.6e-8))  # x 1e-8
    assert paper_figures.TABLE_4["NER:other"]["tfidf"]["N"] == (0.026, 0.024)


def test_table_1b_holds_nothing_as_the_paper_prints_it_as_a_heatmap():
    assert set(paper_figures.TABLE_1B) == set(paper_figures.TABLE_1) and not any(paper_figures.TABLE_1B.values())
    words = {f.key: f.words for f in paper_figures.TEXT_FIGURES}
    assert words == {"verbs_n": "about two-thirds of verbs N", "spans_not_entities": "about 90% of spans not entities",
                     "entities_h": "over 90% of entities H", "early_rounds_h": "~90% H", "pool": "~1M"}  # fmt: skip


def test_with_table_1s_ppmi_std_the_ner_rows_mix_into_the_all_row(monkeypatch):
    from hades_ray.report import paper_table_4

    monkeypatch.setitem(paper_table_4.TABLE_4["All"]["ppmi"], "H", (0.198, 0.134))
    notes = paper_table_4.notes(paper_figures.TABLE_1)
    assert not any("Table 1" in n or "NER rows" in n for n in notes), notes
    (pos,) = notes  # the POS rows still miss, the one Table 4 note that is not the slip
    assert "POS rows" in pos


def test_a_row_with_h_below_n_is_named_against_appendix_a(monkeypatch):
    from hades_ray.report import paper_table_4

    monkeypatch.setitem(paper_table_4.TABLE_4["POS:VERB"]["mlm_entropy"], "H", (1.50, 1.25))
    notes = [n for n in paper_table_4.notes(paper_figures.TABLE_1) if "not above" in n]
    assert notes == ["Table 4's POS:VERB row gives H a mean entropy of 1.5, not above N's 1.76, though Appendix A "
                     "finds H higher in it irrespective of tag"]  # fmt: skip


def test_the_entity_shares_table_4_implies_are_checked_against_fig_4s_words(monkeypatch):
    from hades_ray.report import paper_table_4

    shares = paper_table_4.entity_shares(54.5)
    assert 89 < shares["spans_not_entities"][0] < shares["spans_not_entities"][1] < 92
    assert 90 < shares["entities_h"][0] < shares["entities_h"][1] < 95
    assert paper_figures.fig_4_notes() == []  # "about 90% of spans not entities", "over 90% of entities H"
    figures = [paper_figures.Figure(f.key, f.label, 20.0 if f.key == "share_h" else f.value, f.unit)
               for f in paper_figures.ANNOTATION]  # fmt: skip
    monkeypatch.setattr(paper_figures, "ANNOTATION", tuple(figures))
    not_entities, entities_h = paper_figures.fig_4_notes()  # 20% H labels: far fewer entity spans, fewer H
    assert "spans that are not entities" in not_entities and '"about 90% of spans not entities"' in not_entities
    assert "H share of entity spans" in entities_h and '"over 90% of entities H"' in entities_h


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


def test_table_4_puts_our_spans_in_the_papers_rows_and_sets_its_figures_beside_ours():
    from hades_ray.report.paper_text import table_4, table_4_numbers

    labels = np.array([1, 1, 0, 1, 0, 1])
    values = {"ppmi": np.array([0.1, 0.3, 0.2, 0.5, 0.4, 0.9])}
    tags = [("NOUN", ""), ("NOUN", "PERSON"), ("NOUN", ""), ("VERB", "GPE"), ("DET", ""), ("", "")]
    numbers = table_4_numbers(values, labels, tags)
    assert list(numbers) == list(paper_figures.TABLE_4)  # the paper's nine rows, in its order
    assert numbers["POS:NOUN"]["ppmi"]["H"] == pytest.approx((0.2, 0.1414, 2), abs=1e-4)
    assert numbers["POS:other"]["ppmi"]["N"] == (0.4, None, 1)  # DET: a POS the paper gives no row
    assert numbers["NER:other"]["ppmi"]["H"] == pytest.approx((0.4, 0.1414, 2), abs=1e-4)  # PERSON and GPE
    assert numbers["NER:null"]["ppmi"]["H"][2] == 1 and numbers["All"]["ppmi"]["H"][2] == 4  # untagged: All only
    rows = {r[0]: r for r in table_4(numbers, "tags.json").rows}
    assert rows["All"][2:6] == ["0.198 (0.144)", "0.45 (0.342)", "0.216 (0.129)", "0.3 (0.141)"]
    assert rows["POS:ADJ"][2:6] == ["0.18 (0.128)", "–", "0.164 (0.117)", "–"]  # no spans of ours; theirs shown
    assert rows["POS:VERB"][3] == "0.5 (–)"  # one H verb: no std
