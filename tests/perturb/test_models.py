"""MASK/REPLACE/RANK with micro random-weight models: the rules a user relies on, not the models' quality."""

import numpy as np
import pytest
import torch

from hades_ray.config import load_config
from hades_ray.perturb.settings import ReplaceConfig
from hades_ray.perturb.rank import encode_for_perplexity, most_fluent, perplexities
from hades_ray.perturb.replace import MaskedSequence, choose_tokens, fill_masks, vocabulary_bans
from hades_ray.perturb.steps import assemble_rows, prepare_rows, rank_rows, replace_rows
from hades_ray.text.pipeline import load_pipeline
from hades_ray.text.stopwords import stop_words

TEXT = (
    "Marie Curie was a physicist and chemist. She was born in Warsaw in 1867. "
    "She moved to Paris and studied physics at the University of Paris. "
    "Her research on radioactivity earned two Nobel Prizes in physics and chemistry. "
    "She founded the Curie Institute in Paris, which still studies cancer today."
)


@pytest.fixture(scope="module")
def models(micro_home):
    from hades_ray.models.registry import load_causal_lm, load_masked_lm

    mlm_tok, mlm = load_masked_lm("local:mlm", "cpu")
    lm_tok, lm = load_causal_lm("local:gpt2", "cpu")
    return mlm_tok, mlm, lm_tok, lm


def _prepared(models, **overrides):
    config = load_config("local", overrides=[f"{k}={v}" for k, v in overrides.items()])
    row = {"doc_id": "curie", "title": "Marie Curie", "text": TEXT, "reject": "", "source": "t:1"}
    return config, prepare_rows([row], load_pipeline(config.language, config.spacy_model), models[0], config)[0]


def test_mask_leaves_context_alone_and_never_picks_stop_words(models):
    config, row = _prepared(models, **{"perturb.rank.num_candidates": 5})
    assert row["status"] == "ok"
    context_end = TEXT.index("She moved")
    stops = stop_words()
    for unit in row["units"]:
        assert unit["start"] >= context_end
        span = TEXT[unit["start"] : unit["end"]]
        assert span.lower() not in stops and any(c.isalnum() for c in span)
    spans = {TEXT[u["start"] : u["end"]] for u in row["units"]}
    assert "Curie Institute" in spans or "the Curie Institute" in spans  # entities are masked whole
    assert "Curie" not in spans
    assert len(row["chosen"]) == 5 and all(row["chosen"])


def test_short_text_is_counted_not_perturbed(models):
    config = load_config("local")
    row = {"doc_id": "s", "title": "", "text": "One sentence. Two sentences. Three here.", "reject": "", "source": ""}
    nlp = load_pipeline(config.language, config.spacy_model)
    assert prepare_rows([row], nlp, models[0], config)[0]["status"] == "too_short"


def test_replace_never_keeps_the_original_and_runs_one_forward_per_step(models, monkeypatch):
    config, row = _prepared(models, **{"perturb.rank.num_candidates": 6})
    mlm_tok, mlm = models[0], models[1]
    calls = []
    original_forward = mlm.base_model.forward
    monkeypatch.setattr(mlm.base_model, "forward", lambda *a, **k: calls.append(1) or original_forward(*a, **k))
    bans = vocabulary_bans(mlm_tok, mlm.config.vocab_size)
    replace_rows([row], mlm, mlm_tok, bans, config, {})
    assemble_rows([row], mlm_tok, models[2], 64)
    candidates = [{"perturbed": t, "spans": s} for t, s in zip(row["cand_texts"], row["cand_spans"])]
    most_masks = max(
        sum(row["units"][u]["token_end"] - row["units"][u]["token_start"] for u in c) for c in row["chosen"]
    )
    assert len(calls) == most_masks  # all 6 candidates (one length) share each step's forward
    assert [len(ids) for ids in row["rank_ids"]] and all(ids for ids in row["rank_ids"])
    for candidate in candidates:
        perturbed = TEXT
        for span in reversed(candidate["spans"]):
            assert span["replacement"].lower() != span["original"].lower()
            assert candidate["perturbed"][span["start"] : span["end"]] == span["replacement"]
            perturbed = perturbed[: span["orig_start"]] + span["replacement"] + perturbed[span["orig_end"] :]
        assert perturbed == candidate["perturbed"]  # spans applied to the original give the text exactly
        assert candidate["perturbed"].startswith(TEXT[: TEXT.index("She moved")])


def test_top_k_and_top_p_keep_to_their_support():
    logits = torch.tensor([[5.0, 4.0, 3.0, 2.0, 1.0, 0.0]] * 200)
    uniforms = np.linspace(0, 0.999, 200)
    top_k = choose_tokens(logits, uniforms, ReplaceConfig(decoding="top_k", top_k=2))
    assert set(top_k.tolist()) == {0, 1}
    top_p = choose_tokens(logits, uniforms, ReplaceConfig(decoding="top_p", top_p=0.7))
    assert set(top_p.tolist()) == {0, 1}  # p(0)=0.64 < 0.7, so the nucleus needs token 1 too
    greedy = choose_tokens(logits, uniforms, ReplaceConfig(decoding="greedy"))
    assert set(greedy.tolist()) == {0}


def test_fill_masks_result_does_not_depend_on_the_batch(models):
    mlm_tok, mlm = models[0], models[1]
    bans = vocabulary_bans(mlm_tok, mlm.config.vocab_size)
    texts = ["the river flows to the sea", "a very long sentence about the history of the old town hall"]

    def sequences():
        out = []
        for i, text in enumerate(texts):
            ids = mlm_tok(text)["input_ids"]
            positions = [2, 3]
            originals = [ids[p] for p in positions]
            for p in positions:
                ids[p] = mlm_tok.mask_token_id
            out.append(MaskedSequence(ids, positions, originals, frozenset([2]), np.random.default_rng(i)))
        return out

    together = fill_masks(mlm, sequences(), ReplaceConfig(), bans, mlm_tok.pad_token_id)
    alone = [fill_masks(mlm, [s], ReplaceConfig(), bans, mlm_tok.pad_token_id)[0] for s in sequences()]
    assert together == alone


def test_rank_keeps_the_lowest_perplexity(models):
    lm_tok, lm = models[2], models[3]
    texts = ["the cat sat on the mat .", "mat the on sat cat the .", "a much longer text about cats and mats ."]
    ids = encode_for_perplexity(lm_tok, texts, 64)
    batched = perplexities(lm, ids, lm_tok.pad_token_id)
    single = [perplexities(lm, [i], lm_tok.pad_token_id)[0] for i in ids]
    assert np.allclose(batched, single, rtol=1e-4)
    assert most_fluent([3.0, 1.0, 1.0]) == 1
    rows = [{"status": "ok", "rank_ids": ids}]
    ranked = rank_rows(rows, lm, lm_tok.pad_token_id)[0]["cand_ppls"]
    assert ranked == pytest.approx(batched) and most_fluent(ranked) == int(np.argmin(batched))
