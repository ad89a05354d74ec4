"""What a guarded generation is measured by (hades_ray/guard/metrics.py), on hand-made figures and stand-in
scorers and models: every figure is one that can be worked out by hand."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from hades_ray.guard import metrics
from hades_ray.text.languages import DEFAULT_LANGUAGE as ENGLISH

TEXTS = [("The cat sat. ", "Paris is the capital"), ("A dog. ", "of the moon")]


def test_the_generated_content_words_are_those_after_the_prompt_less_stop_words():
    words, picked = metrics.generated_words("The cat sat. ", "Paris is the capital", lang=ENGLISH)
    assert [words[k] for k in picked] == ["Paris", "capital"]
    assert words[:3] == ["The", "cat", "sat"]
    found, owners = metrics.generated_items(TEXTS, lang=ENGLISH)
    assert [words[i] for words, i, _ in found] == ["Paris", "capital", "moon"] and owners.tolist() == [0, 0, 1]


class Spans:
    """A scorer whose p(H) of the k-th word asked is k / 10."""

    def score_spans(self, items):
        assert all(item["start"] == item["end"] for item in items)
        return np.arange(len(items)) / 10


class Instances:
    def score_instances(self, instances, settings):
        assert settings == "detect" and [i.extra["doc_id"] for i in instances] == ["0", "0", "1"]
        return np.array([0.9, 0.2, 0.7]), None


def test_online_and_detector_p_give_each_text_its_own_words():
    online = metrics.online_p(Spans(), TEXTS, lang=ENGLISH)
    assert [p.tolist() for p in online] == [[0.0, 0.1], [0.2]]
    offline = metrics.detector_p(Instances(), "detect", TEXTS, lang=ENGLISH)
    assert [p.tolist() for p in offline] == [[0.9, 0.2], [0.7]]


def test_flag_figures_and_none_for_no_words():
    assert metrics.flag_figures(np.array([0.1, 0.5, 0.9, 0.3]), 0.5) == pytest.approx(
        {"mean_p": 0.45, "p90_p": 0.78, "share_flagged": 0.5}
    )
    assert metrics.flag_figures(np.zeros(0), 0.5) == {"mean_p": None, "p90_p": None, "share_flagged": None}


def test_a_matched_threshold_flags_the_reference_judges_share():
    reference = [0.1, 0.6, 0.7, 0.2]  # half at or above 0.5
    other = np.linspace(0, 1, 101).tolist()
    cut = metrics.matched_threshold(reference, other, 0.5)
    assert cut == pytest.approx(0.5) and np.mean(np.array(other) >= cut) == pytest.approx(0.5, abs=0.01)


def test_distinct_n_counts_unique_lowercased_ngrams():
    assert metrics.distinct_n(["A b a", "b A"], 1) == 2 / 5
    assert metrics.distinct_n(["a b a b"], 2) == 2 / 3
    assert metrics.distinct_n([""], 2) == 0


def test_the_perplexity_of_uniform_logits_is_the_vocabulary_size():
    import torch

    vocab = 7

    def model(input_ids):
        return SimpleNamespace(logits=torch.zeros(1, input_ids.shape[1], vocab))

    def tokenizer(text):
        return {"input_ids": [1] * len(text.split())}

    assert metrics.generation_perplexity(model, tokenizer, ["a b", "c"], [[2, 3], [4]]) == pytest.approx(vocab)


def test_two_detectors_agree_on_texts_with_the_same_flagged_set():
    judge = [np.array([0.9, 0.1]), np.array([0.2]), np.array([0.8, 0.7])]
    second = [np.array([0.6, 0.4]), np.array([0.1]), np.array([0.2, 0.9])]
    figures = metrics.flag_agreement(judge, second, 0.5, 0.5)
    assert figures["outputs"] == 3 and figures["words"] == 5
    assert figures["share_outputs_agreeing"] == pytest.approx(2 / 3)
    assert figures["agreeing_with_no_flags"] == pytest.approx(1 / 2)  # of the two agreeing, one flags nothing
    assert figures["share_agreeing_among_outputs_the_judge_flags"] == pytest.approx(1 / 2)
    assert figures["lr_flags_where_judge_flags"] == pytest.approx(2 / 3)
    assert figures["lr_flags_where_judge_does_not"] == 0
    assert figures["lr_share_flagged"] == pytest.approx(2 / 5) and figures["lr_mean_p"] == pytest.approx(2.2 / 5)
    assert -1 <= figures["word_kappa"] <= 1


def test_the_bootstrap_interval_of_a_flag_share_change():
    before = [np.array([0.9, 0.1]), np.array([0.8]), np.array([0.2, 0.3])]
    after = [np.array([0.1, 0.1]), np.array([0.2]), np.array([0.2, 0.3])]
    lo, hi = metrics.flag_share_change_ci(before, after, 0.5, seed=0, rounds=500)
    assert lo < 0 and hi <= 0  # the third text never changes: a resample of it alone changes nothing
    assert metrics.flag_share_change_ci(before, before, 0.5, seed=0, rounds=50) == [0.0, 0.0]
    assert metrics.flag_share_change_ci(before, after, 0.5, seed=3, rounds=50) == metrics.flag_share_change_ci(
        before, after, 0.5, seed=3, rounds=50
    )


class Targets:
    """A scorer that gives every target the same p(H), and keeps what it was asked."""

    def __init__(self, p):
        self.p, self.asked = p, []

    def score(self, targets):
        self.asked += targets
        return [np.full(len(t.first), self.p) for t in targets]


def test_the_final_text_check_finds_recorded_words_by_their_characters():
    text = "Hi. Paris is big"
    generation = "Paris is big"
    result = {
        "generation": generation,
        "scores": [
            {"start": 0, "end": 5, "word": "Paris", "p": 0.4},
            {"start": 9, "end": 12, "word": "big", "p": 0.6},
            {"start": 6, "end": 8, "word": "xx", "p": 0.9},  # its characters moved: not aligned
        ],
    }
    scorer = Targets(0.55)
    check = metrics.final_text_check(scorer, [text], [result], 0.5, lang=ENGLISH)
    assert check == {"words": 2, "max_abs_diff": pytest.approx(0.15), "flags_differing": 1, "unaligned": 1}
    (asked,) = scorer.asked
    assert [asked.words[f] for f in asked.first] == ["Paris", "big"]


def test_the_cost_floor_of_an_arm():
    plain = {"seconds": 10.0, "generator_forwards": 100, "judge_forwards": 0, "judge_forward_seconds": 0.0}
    arm = {"seconds": 30.0, "generator_forwards": 120, "judge_forwards": 240, "judge_forward_seconds": 6.0}
    floor = metrics.cost_floor(plain, arm)
    assert floor == pytest.approx(
        {
            "overhead_floor": 1.8,
            "judge_forwards_per_step": 2.0,
            "judge_forward_ms": 25.0,
            "generator_step_ms": 100.0,
            "extra_steps": 1.2,
        }  # fmt: skip
    )
    assert math.isclose(metrics.cost_floor(plain, plain)["overhead_floor"], 1.0)
