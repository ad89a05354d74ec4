"""Each selection filter as a pure function over stored scores."""

import numpy as np
import pandas as pd

from hades_ray.select import filters
from hades_ray.pool.features import window_text
from hades_ray.select.tune_selection import selection_score
from hades_ray.text.languages import DEFAULT_LANGUAGE


def find_thresholds(p_h: np.ndarray, target: int) -> tuple[float, float]:
    """The band over the scores themselves, the exact reference for the histogram's: low/high p(H)
    thresholds trimming both tails equally so that about ``target`` values remain."""
    values = np.sort(np.asarray(p_h, dtype=float))
    if target <= 0 or target >= len(values):
        return 0.0, 1.0
    excess = len(values) - target
    drop_low = excess // 2
    drop_high = excess - drop_low
    return float(values[drop_low]), float(values[len(values) - drop_high - 1])


def test_thresholds_found_for_target():
    p = np.linspace(0, 1, 101)
    low, high = find_thresholds(p, 51)
    kept = filters.threshold_keep(p, low, high)
    assert kept.sum() == 51 and np.isclose(low, 0.25) and np.isclose(high, 0.75)
    assert find_thresholds(p, 500) == (0.0, 1.0)


def test_histogram_thresholds_match_the_exact_ones():
    """Workers return histograms, not scores: the band found from them keeps the target (to a bin)."""
    p = np.random.default_rng(0).beta(2, 5, size=20_000)
    halves = [filters.histogram(p[:7_000]), filters.histogram(p[7_000:])]
    merged = {b: halves[0].get(b, 0) + halves[1].get(b, 0) for b in set(halves[0]) | set(halves[1])}
    low, high = filters.thresholds_from_histogram(merged, 5_000)
    kept = filters.threshold_keep(p, low, high).sum()
    exact_low, exact_high = find_thresholds(p, 5_000)
    assert 5_000 <= kept <= 5_000 + 20 and abs(low - exact_low) <= 1e-4 and abs(high - exact_high) <= 1e-4
    fixed_low, found_high = filters.thresholds_from_histogram(merged, 5_000, low=0.1)
    assert fixed_low == 0.1 and 5_000 <= filters.threshold_keep(p, 0.1, found_high).sum() <= 5_020
    assert filters.thresholds_from_histogram(merged, 50_000) == (0.0, 1.0)


def test_paraphrase_cut():
    assert list(filters.paraphrase_keep([0.2, 0.9, 0.95], 0.9)) == [True, True, False]


def test_obvious_swaps_are_dropped_per_row_by_seeded_hash():
    ids = [f"i{k}" for k in range(4_000)]
    frame = pd.DataFrame({"orig_ent": ["DATE"] * 3_000 + ["PERSON", "GPE"] * 500, "repl_ent": ["DATE"] * 4_000})
    swaps = filters.obvious_swaps(frame, ["DATE", "PERSON"])
    assert swaps.sum() == 3_500  # DATE->DATE and the cross swaps PERSON->DATE; GPE->DATE is none
    keep = filters.swap_keep(ids, swaps, 0.8, seed=1, round_index=0)
    assert keep[~swaps].all() and abs((~keep).sum() / 3_500 - 0.8) < 0.03
    # A row's decision depends on its id alone: any subset, in any order, decides it the same way.
    order = np.random.default_rng(3).permutation(4_000)[:500]
    again = filters.swap_keep([ids[i] for i in order], swaps[order], 0.8, seed=1, round_index=0)
    assert (again == keep[order]).all()
    assert (filters.swap_keep(ids, swaps, 0.8, seed=2, round_index=0) != keep).any()


def test_rebalance_keeps_all_predicted_n():
    ids = [f"i{k}" for k in range(2_000)]
    pred = np.array([1] * 1_000 + [0] * 1_000)
    keep = filters.rebalance_keep(ids, pred, 0.3, seed=0, round_index=1)
    assert keep[1_000:].all() and abs(keep[:1_000].mean() - 0.3) < 0.05


def test_batch_is_the_smallest_keys_whatever_the_split():
    ids = [f"i{k}" for k in range(1_000)]
    keys = filters.sample_keys(ids, seed=0, round_index=0)
    whole = filters.smallest(zip(keys, ids, [0] * 1_000), 40)
    parts = [filters.smallest(zip(keys[lo:hi], ids[lo:hi], [0] * 1_000), 40) for lo, hi in ((0, 300), (300, 1_000))]
    assert filters.smallest([*parts[0], *parts[1]], 40) == whole and len(whole) == 40


def test_window():
    text, start, end = window_text(["a", "b", "cc", "d", "e"], 2, 2, 1, DEFAULT_LANGUAGE)
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
    from hades_ray.pool.features import cosine_similarities

    torch.manual_seed(0)
    model = BertModel(
        BertConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
    ).eval()
    tok = _tokenizer()
    for pooling in ("cls", "mean"):
        sims = cosine_similarities(tok, model, ["paris", "a dog"], ["paris", "quantum banana"], pooling)
        assert np.isclose(sims[0], 1.0, atol=1e-5) and sims[1] < 1.0


def test_a_date_replaced_by_a_name_is_a_date_name_swap():
    """The paper drops a Date or Name "replaced by a different Date or Name": cross swaps count too."""
    frame = pd.DataFrame(
        {
            "orig_ent": ["DATE", "PERSON", "DATE", "PERSON", "DATE", "GPE", "ORG"],
            "repl_ent": ["PERSON", "DATE", "DATE", "PERSON", "", "DATE", "PERSON"],
        }
    )
    assert filters.obvious_swaps(frame, ["DATE", "PERSON"]).tolist() == [True, True, True, True, False, False, False]
    # The labels that count as a Name are configurable: ORG as a Name makes ORG->PERSON a swap too.
    assert filters.obvious_swaps(frame, ["DATE", "PERSON", "ORG"]).tolist()[-1]
    # Cross swaps are dropped at the configured share, like the others.
    ids = [f"i{k}" for k in range(3_000)]
    cross = filters.obvious_swaps(pd.DataFrame({"orig_ent": ["DATE"] * 3_000, "repl_ent": ["PERSON"] * 3_000}),
                                  ["DATE", "PERSON"])  # fmt: skip
    keep = filters.swap_keep(ids, cross, 0.8, seed=1, round_index=0)
    assert abs((~keep).mean() - 0.8) < 0.03
