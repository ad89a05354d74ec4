"""RANK's shared prefix (hades_ray/perturb/rank_prefix.py): the perplexities of the unshared path within
1e-5 relative in float32 and the same kept candidate, the same bytes whatever the block around a
document and whatever the budget, the prefix run once per document, and ``share_prefix: false`` the
old path to the last bit; on the micro models and on the offline kit in its default dtype (skipped
where the kit is not built)."""

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest
from hades_ray.config import load_config
from hades_ray.errors import ConfigError
from hades_ray.models.registry import load_causal_lm
from hades_ray.perturb.rank import most_fluent, perplexities
from hades_ray.perturb.rank_prefix import document_perplexities, shared_forward_shapes, shared_prefix_length
from hades_ray.perturb.settings import RankConfig

KIT = Path(os.environ.get("HADES_GOLDEN_KIT_HOME") or Path.home() / ".cache" / "hades_ray") / "models"
RTOL = 1e-5  # float32: another order of the same sums; measured at most 1.5e-6 on the micro GPT-2
# (length, candidates, first position a candidate may change): two documents share a length and a
# prefix, so exact packing lets their prefixes and some remainders share a forward.
DOCUMENTS = [(23, 4, 8), (41, 3, 20), (41, 5, 20), (70, 3, 30), (118, 6, 40), (30, 1, 5)]


@pytest.fixture(scope="module", params=["micro", "kit"])
def lm(request, micro_home):
    """The micro or the offline kit's GPT-2, in the local preset's RANK dtype (float32 on a CPU)."""
    if request.param == "kit" and not (KIT / "gpt2" / "model.safetensors").is_file():
        pytest.skip(f"the offline kit is not built at {KIT} (make models)")
    folder = {"micro": micro_home / "models", "kit": KIT}[request.param]
    _, model = load_causal_lm(str(folder / "gpt2"), "cpu", load_config("local").perturb.rank.dtype)
    return model


def _documents(vocab: int) -> list[list[list[int]]]:
    """Each document's candidates: one random text, each candidate with a few tokens replaced (its
    length changing by up to 2) from a position past the document's untouched lead."""
    rng = np.random.default_rng(11)
    documents = []
    for length, count, lead in DOCUMENTS:
        text = [int(t) for t in rng.integers(10, min(vocab, 4000), size=length)]
        candidates = []
        for _ in range(count):
            ids = list(text)
            at = int(rng.integers(lead, length - 3))
            ids[at : at + 2] = [int(t) for t in rng.integers(10, min(vocab, 4000), size=int(rng.integers(1, 5)))]
            candidates.append(ids)
        documents.append(candidates)
    return documents


def _config(**settings) -> RankConfig:
    if settings.get("packing") == "binned":  # full rows: a small budget keeps the dummy rows few
        settings = {"bin_tokens": 32, "max_batch_tokens": 300, **settings}
    return dataclasses.replace(load_config("local").perturb.rank, **settings)


BUDGETS = {"exact": (256, 2_048, 32_768), "binned": (300, 700)}


@pytest.mark.parametrize("packing", ["exact", "binned"])
def test_shared_prefix_keeps_the_perplexities_and_the_kept_candidate(lm, packing):
    documents = _documents(lm.config.vocab_size)
    whole = document_perplexities(lm, documents, 0, _config(packing=packing, share_prefix=False))
    shared = document_perplexities(lm, documents, 0, _config(packing=packing))
    for before, after in zip(whole, shared):
        assert after == pytest.approx(before, rel=RTOL)
        assert most_fluent(after) == most_fluent(before)


@pytest.mark.parametrize("packing", ["exact", "binned"])
def test_shared_prefix_gives_the_same_bytes_whatever_the_block_and_budget(lm, packing):
    documents = _documents(lm.config.vocab_size)
    alone = [document_perplexities(lm, [doc], 0, _config(packing=packing))[0] for doc in documents]
    for budget in BUDGETS[packing]:
        config = _config(packing=packing, max_batch_tokens=budget)
        assert document_perplexities(lm, documents, 0, config) == alone  # to the last bit
        assert document_perplexities(lm, documents[::-1], 0, config) == alone[::-1]
    halves = [documents[:3], documents[3:]]  # another shard layout
    assert [p for half in halves for p in document_perplexities(lm, half, 0, _config(packing=packing))] == alone


def test_share_prefix_false_is_the_unshared_path_to_the_last_bit(lm):
    documents = _documents(lm.config.vocab_size)
    config = _config(share_prefix=False)
    flat = perplexities(lm, [ids for doc in documents for ids in doc], 0, config)
    assert [p for doc in document_perplexities(lm, documents, 0, config) for p in doc] == flat


def test_the_prefix_runs_once_per_document(lm):
    """Every forward of the base model, seen by a hook: each document's S prefix tokens run once, in a
    forward without keys and values; each candidate's L - S remainder tokens on them; and these are
    the forwards the planner counts. (Lengths of 64 tokens and more: no filler rows to tell apart.)"""
    rng = np.random.default_rng(3)
    documents = []
    for length, count in ((200, 5), (230, 4), (200, 3)):
        text = [int(t) for t in rng.integers(10, 4000, size=length)]
        starts = [int(rng.integers(90, 120)) for _ in range(count)]
        documents.append(
            [text[:at] + [int(t) for t in rng.integers(10, 4000, size=2)] + text[at + 2 :] for at in starts]
        )
    seen = []

    def note(_, args, kwargs):
        cached = kwargs.get("cache", kwargs.get("past_key_values")) is not None
        seen.append((cached, tuple(kwargs["input_ids"].shape)))

    hook = lm.base_model.register_forward_pre_hook(note, with_kwargs=True)
    try:
        document_perplexities(lm, documents, 0, _config(packing="exact"))
    finally:
        hook.remove()
    prefixes = [shared_prefix_length(doc) for doc in documents]
    assert all(89 <= p < 119 for p in prefixes)  # one less than the first change
    prefix_forwards = [shape for cached, shape in seen if not cached]
    remainder_forwards = [shape for cached, shape in seen if cached]
    assert sorted(width for rows, width in prefix_forwards for _ in range(rows)) == sorted(prefixes)  # once each
    assert sum(rows for rows, _ in remainder_forwards) == sum(len(doc) for doc in documents)
    assert sum(rows * width for rows, width in remainder_forwards) == sum(
        len(ids) - p for p, doc in zip(prefixes, documents) for ids in doc
    )
    planned = shared_forward_shapes([(p, [len(ids) for ids in doc]) for p, doc in zip(prefixes, documents)])
    assert prefix_forwards == planned["prefix"] and remainder_forwards == planned["remainder"]


def test_shared_prefix_length():
    assert shared_prefix_length([[1, 2, 3, 4]]) == 0  # one candidate: nothing shared
    # common [1, 2]: its last token starts each remainder
    assert shared_prefix_length([[1, 2, 3, 4], [1, 2, 9, 4]]) == 1
    assert shared_prefix_length([[1, 2, 3], [1, 2, 3]]) == 2  # identical candidates
    assert shared_prefix_length([[1, 2], [1, 2, 3]]) == 1  # one a prefix of the other
    assert shared_prefix_length([[5, 2], [1, 2]]) == 0


def test_identical_and_prefix_candidates_cover_the_whole_text(micro_home):
    _, model = load_causal_lm(str(micro_home / "models" / "gpt2"), "cpu", "float32")
    documents = [[[1, 20, 30, 40], [1, 20, 30, 40]], [[1, 20, 30], [1, 20, 30, 41, 42]], [[7], [7]]]
    whole = document_perplexities(model, documents, 0, RankConfig(share_prefix=False))
    assert document_perplexities(model, documents, 0, RankConfig()) == [pytest.approx(p, rel=RTOL) for p in whole]


def test_the_config_key_turns_sharing_off():
    assert load_config("local").perturb.rank.share_prefix is True
    assert load_config("local", overrides=["perturb.rank.share_prefix=false"]).perturb.rank.share_prefix is False
    with pytest.raises(ConfigError, match="perturb.rank.share_prefix"):
        load_config("local", overrides=["perturb.rank.share_prefix=sometimes"])


def test_the_planner_counts_each_prefix_once():
    shapes = shared_forward_shapes([(50, [60, 61, 62]), (0, [30])])
    assert shapes["prefix"] == [(2, 50)]  # one document's prefix, one filler row lifts it to 64 token rows
    assert sorted(width for _, width in shapes["remainder"]) == [10, 11, 12, 30]


def test_tokens_run_count_a_shared_prefix_once_and_skip_one_token_remainders():
    from hades_ray.perturb.rank_prefix import tokens_run

    documents = [[[1, 2, 3, 4], [1, 2, 3, 5, 6], [1, 2, 7]], [[9, 8]], [[4, 5, 6], [4, 5, 6, 7]]]
    assert tokens_run(documents, share=False) == 4 + 5 + 3 + 2 + 3 + 4
    # shared: one token less than the common prefix; a lone candidate shares nothing; a one-token
    # remainder (the last document's) is scored from the prefix's last logits
    assert tokens_run(documents, share=True) == (1 + 3 + 4 + 2) + 2 + (2 + 2)


def test_perplexity_change_names_the_documents_whose_pick_moves():
    from hades_ray.perturb.rank import perplexity_change

    before = {"a": [10.0, 12.0], "b": [5.0, 5.00001], "c": [3.0]}
    after = {"a": [10.5, 12.0], "b": [5.00002, 5.00001], "d": [1.0]}
    change = perplexity_change(before, after)
    assert change["documents"] == 2 and change["kept_candidate_differs"] == ["b"]
    assert change["max_relative_difference"] == pytest.approx(0.05)
    assert change["smallest_best_gap_relative"] == pytest.approx(2e-6) and change["gaps_below_1e-5"] == 1
    assert perplexity_change({}, {})["smallest_best_gap_relative"] is None
