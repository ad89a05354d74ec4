"""Each selection filter as a pure function over stored scores."""

import numpy as np
import pandas as pd

from hades_ray.select import filters
from hades_ray.select.features import window_text
from hades_ray.select.tune_selection import selection_score


def test_thresholds_found_for_target():
    p = np.linspace(0, 1, 101)
    low, high = filters.find_thresholds(p, 51)
    kept = filters.threshold_keep(p, low, high)
    assert kept.sum() == 51 and np.isclose(low, 0.25) and np.isclose(high, 0.75)
    assert filters.find_thresholds(p, 500) == (0.0, 1.0)


def test_paraphrase_cut():
    assert list(filters.paraphrase_keep([0.2, 0.9, 0.95], 0.9)) == [True, True, False]


def test_obvious_swaps_share_is_seeded():
    frame = pd.DataFrame(
        {"orig_ent": ["DATE"] * 10 + ["PERSON", "GPE", "DATE"], "repl_ent": ["DATE"] * 10 + ["PERSON", "GPE", ""]}
    )
    swaps = filters.obvious_swaps(frame, ["DATE", "PERSON"])
    assert swaps.sum() == 11
    keep = filters.swap_keep(frame, ["DATE", "PERSON"], 0.8, seed=1)
    assert (~keep).sum() == round(0.8 * 11) and keep[11] and keep[12]
    assert (keep == filters.swap_keep(frame, ["DATE", "PERSON"], 0.8, seed=1)).all()


def test_rebalance_keeps_all_predicted_n():
    pred = np.array([1] * 10 + [0] * 5)
    keep = filters.rebalance_keep(pred, 0.3, seed=0)
    assert keep[10:].all() and keep[:10].sum() == 3


def test_sample_batch_and_window():
    ids = np.array([f"i{k}" for k in range(10)])
    assert len(filters.sample_batch(ids, 4, 0)) == 4 and len(filters.sample_batch(ids, 40, 0)) == 10
    text, start, end = window_text(["a", "b", "cc", "d", "e"], 2, 2, 1)
    assert text == "b cc d" and text[start:end] == "cc"


def test_selection_score_prefers_balance():
    frame = pd.DataFrame({"p_hallucination": np.linspace(0, 1, 200), "similarity": 0.1, "keep_swap": True})
    frame["pred"] = (frame["p_hallucination"] >= 0.5).astype(int)
    rates = {"alpha": 0.8, "beta": 0.7, "gamma": 0.6, "false_omission": 0.2}
    wide = selection_score(frame, rates, 50, 0.0, 1.0, 0.9)
    assert wide["available"] > 50 and 0 <= wide["expected_h_share"] <= 1
    assert selection_score(frame, rates, 500, 0.0, 1.0, 0.9)["balance_error"] > wide["balance_error"]


def test_cosine_similarity_pure(tmp_path):
    import torch
    from transformers import BertConfig, BertModel

    from hades_ray.models.micro import _tokenizer
    from hades_ray.select.features import cosine_similarities

    torch.manual_seed(0)
    model = BertModel(
        BertConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
    ).eval()
    tok = _tokenizer()
    for pooling in ("cls", "mean"):
        sims = cosine_similarities(tok, model, ["paris", "a dog"], ["paris", "quantum banana"], pooling)
        assert np.isclose(sims[0], 1.0, atol=1e-5) and sims[1] < 1.0
