"""Token-budget packing of REPLACE and RANK (hades_ray/perturb/packing.py): the same bytes whatever
the block around a document and whatever the budget, on the micro models and on the offline kit in
its default dtype (skipped where the kit is not built); RANK's chunked log-softmax against one
projection over all positions, to the last bit; the MLM head only at the filled positions."""

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from hades_ray.config import load_config
from hades_ray.models.registry import load_causal_lm, load_masked_lm
from hades_ray.models.fixed_rows import MIN_FORWARD_TOKENS, MIN_HEAD_ROWS
from hades_ray.models.nll import next_token_nll
from hades_ray.perturb.rank import perplexities
from hades_ray.perturb.replace import MaskedSequence, fill_masks, model_steps, step_chunks, vocabulary_bans
from hades_ray.perturb.settings import RankConfig

KIT = Path(os.environ.get("HADES_GOLDEN_KIT_HOME") or Path.home() / ".cache" / "hades_ray") / "models"
# Documents as (length, candidates): two share a length, so exact packing puts them in one forward.
DOCUMENTS = [(23, 3), (41, 2), (41, 3), (118, 2)]


@pytest.fixture(scope="module", params=["micro", "kit"])
def models(request, micro_home):
    """(MLM tokenizer, MLM, causal LM) of the micro kit or the offline kit, in the local preset's dtypes."""
    built = all((KIT / name / "model.safetensors").is_file() for name in ("mlm", "gpt2"))
    if request.param == "kit" and not built:  # both: a kit still building has its MLM before its GPT-2
        pytest.skip(f"the offline kit is not built at {KIT} (make models)")
    folder = {"micro": micro_home / "models", "kit": KIT}[request.param]
    settings = load_config("local").perturb
    tokenizer, mlm = load_masked_lm(str(folder / "mlm"), "cpu", settings.replace.dtype)
    _, lm = load_causal_lm(str(folder / "gpt2"), "cpu", settings.rank.dtype)
    return tokenizer, mlm, lm, vocabulary_bans(tokenizer, mlm.config.vocab_size)


def _documents(tokenizer) -> list[list[MaskedSequence]]:
    """Each document's candidates: one random text, a different set of masked positions per candidate."""
    rng = np.random.default_rng(7)
    documents = []
    for doc, (length, candidates) in enumerate(DOCUMENTS):
        text = [int(t) for t in rng.integers(1000, min(tokenizer.vocab_size, 4000), size=length)]
        sequences = []
        for candidate in range(candidates):
            positions = sorted(int(p) for p in rng.choice(range(3, length - 1), size=2 + candidate, replace=False))
            ids = [tokenizer.mask_token_id if i in positions else t for i, t in enumerate(text)]
            seed_rng = np.random.default_rng([doc, candidate])
            sequences.append(
                MaskedSequence(ids, positions, [text[p] for p in positions], frozenset(positions[:1]), seed_rng)
            )
        documents.append(sequences)
    return documents


def _fills(models, documents, **settings) -> list[list[int]]:
    tokenizer, mlm, _, bans = models
    config = dataclasses.replace(load_config("local").perturb.replace, **settings)
    sequences = [seq for document in documents for seq in document]
    return fill_masks(mlm, sequences, config, bans, tokenizer.pad_token_id or 0)


def test_replace_fills_do_not_depend_on_the_block_or_the_budget(models):
    alone = [fill for doc in _documents(models[0]) for fill in _fills(models, [doc], max_batch_tokens=100_000)]
    for budget in (32_768, 130):  # all rows in one forward, a few rows per forward
        assert _fills(models, _documents(models[0]), max_batch_tokens=budget) == alone
    # binned forwards always run the width's full rows (budget // width): a small budget keeps them cheap
    binned = {"packing": "binned", "max_batch_tokens": 300}
    binned_alone = [fill for doc in _documents(models[0]) for fill in _fills(models, [doc], **binned)]
    assert _fills(models, _documents(models[0]), **binned) == binned_alone


def _token_ids(lm) -> list[list[int]]:
    rng = np.random.default_rng(3)
    return [[int(t) for t in rng.integers(5, lm.config.vocab_size, size=n)] for n, _ in DOCUMENTS for _ in range(3)]


def test_rank_perplexities_do_not_depend_on_the_block_or_the_budget(models):
    lm, token_ids = models[2], _token_ids(models[2])
    alone = [perplexities(lm, [ids], 0)[0] for ids in token_ids]
    for budget in (32_768, 200, 1):
        assert perplexities(lm, token_ids, 0, RankConfig(max_batch_tokens=budget)) == alone  # to the last bit
    binned = RankConfig(packing="binned", bin_tokens=32, max_batch_tokens=300)  # full rows: a small budget
    binned_alone = [perplexities(lm, [ids], 0, binned)[0] for ids in token_ids]
    assert perplexities(lm, token_ids, 0, binned) == binned_alone


def test_chunked_log_softmax_equals_one_projection_over_all_positions(models, monkeypatch):
    lm, token_ids = models[2], _token_ids(models[2])
    head, vocab = lm.get_output_embeddings(), lm.config.vocab_size
    shapes = []
    original = head.forward
    monkeypatch.setattr(head, "forward", lambda x: shapes.append(x.shape[:2]) or original(x))
    chunked = perplexities(lm, token_ids, 0, RankConfig(logits_mb=1))
    for rows, positions in shapes:  # float32 logits and log-probabilities within 1 MB, or one row
        assert rows * positions * vocab * 4 * 2 <= 2**20 or rows == 1 or rows * positions <= MIN_HEAD_ROWS
    assert len(shapes) > len(DOCUMENTS)  # more chunks than forwards: the budget did cut them
    monkeypatch.setattr(head, "forward", original)
    whole = []
    with torch.inference_mode():
        for ids in token_ids:  # the computation before chunking: the full logits, then cross-entropy
            batch = torch.tensor([ids])
            logits = lm(input_ids=batch, attention_mask=torch.ones_like(batch)).logits.float()
            nll = next_token_nll(logits[:, :-1], batch[:, 1:])
            whole.append(float(torch.exp(nll.sum(dim=1) / nll.shape[1])[0]))
    assert chunked == whole


def test_mlm_head_sees_only_the_filled_positions(models, monkeypatch):
    tokenizer, mlm, _, bans = models
    documents = _documents(tokenizer)
    head_rows, body_shapes = [], []
    head, body = mlm.cls, mlm.base_model
    head_forward, body_forward = head.forward, body.forward
    monkeypatch.setattr(head, "forward", lambda x: head_rows.append(tuple(x.shape)) or head_forward(x))
    monkeypatch.setattr(
        body, "forward", lambda **k: body_shapes.append(tuple(k["input_ids"].shape)) or body_forward(**k)
    )
    _fills(models, documents[1:3], max_batch_tokens=41 * 3)  # one length: 8 candidates, 3 rows per forward
    steps = [model_steps(seq, bans) for doc in documents[1:3] for seq in doc]
    forwards = list(step_chunks(steps, 3))
    fewest = -(-MIN_FORWARD_TOKENS // 41)  # filler rows below that (hades_ray/models/fixed_rows.py)
    assert body_shapes == [(max(len(forward), fewest), 41) for forward in forwards]
    hidden = mlm.config.hidden_size
    assert head_rows == [(max(len(forward), MIN_HEAD_ROWS), hidden) for forward in forwards]  # not rows x 41
