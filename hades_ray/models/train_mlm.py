"""The kit's masked LM: MiniLM's pretrained encoder plus an MLM head, briefly trained on leads.

MiniLM ships as a sentence encoder without its MLM head; ``BertForMaskedLM`` ties the output layer
to the word embeddings, so only the small head transform starts random and a few minutes of
whole-word masking restore a usable fill-in-the-blank model. The word embeddings (the output layer too)
stay as pretrained and the output bias starts at the training text's log unigram frequencies, so the
steps go to the encoder learning to predict rather than to relearning what words are and how common.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hades_ray.models.training import TrainLimits


@dataclass
class MlmTrainConfig:
    encoder_path: str | None = None  # None: the pretrained MiniLM from its wheel
    # Measured on 500 held-out leads (top-1 / top-10 recovery of a masked content word; 2 quiet cores,
    # 2026-12-07, /work/exp-style runs of this loop): 220 steps of 32 chunks x 64 tokens, 40% of the words
    # masked, embeddings kept, unigram bias, lr 5e-4: 9.4% / 27.0%. Beside it: 50% masked 8.8% / 26.4%;
    # 16 x 128 tokens 7.6% / 27.4% (and slower); 30% masked at lr 1e-3 (200 steps) 6.8% / 23.2%; the lower
    # 3 layers frozen too 4.0% / 13.0%, so the encoder must learn. The kit before (200 steps of 8 x 128,
    # 15% masked, all weights trained, lr 2e-4) reported 14.7% top-10 on 150 leads.
    max_length: int = 64
    batch_size: int = 32
    mask_probability: float = 0.4  # of the words (whole-word masking, as MASK masks whole words)
    seed: int = 0
    freeze_embeddings: bool = True  # keep the pretrained word (and so output) embeddings as they are
    # MiniLM's dropout (0.1) off while the kit trains: 220 steps see under one pass over the leads, too few to
    # overfit, so dropout only slowed learning, and it cost a quarter of each step on CPU (500 held-out leads,
    # top-1 / top-10, 2-core AMD EPYC, 2026-12-08: with it 9.4% / 27.0% in 324 s, without 10.2% / 29.8% in 265 s).
    dropout: float = 0.0
    unigram_bias: bool = True  # start the output bias at the training text's log unigram frequencies
    # The fresh head learns 10x faster than the pretrained encoder, which only needs nudging.
    # 220 steps: 1.0-1.2 s each on 2 quiet cores (measured: a Xeon with AMX, an AMD EPYC), under 5 of the
    # build's 10 minutes.
    limits: TrainLimits = field(
        default_factory=lambda: TrainLimits(
            max_steps=220,
            lr=5e-4,
            warmup_fraction=0.05,
            log_every=10,
            fresh_prefixes=("cls.",),
            fresh_lr_scale=10.0,
        )
    )


def init_masked_lm(encoder_path: str | Path | None = None):
    """(tokenizer, ``BertForMaskedLM``) with the encoder's weights and a fresh (tied) MLM head."""
    from transformers import AutoTokenizer, BertForMaskedLM

    from hades_ray.models.registry import expected_load_report, minilm_path

    source = str(encoder_path or minilm_path())
    tokenizer = AutoTokenizer.from_pretrained(source)
    # A sentence encoder as an MLM: its pooler is UNEXPECTED and the head MISSING (so its tied weights are
    # "absent from the checkpoint"), which is the design: the build trains that head.
    with expected_load_report():
        model = BertForMaskedLM.from_pretrained(source)
    return tokenizer, model


def warm_start(model, chunks, config: MlmTrainConfig) -> None:
    """What ``config`` keeps of the pretrained model, how the fresh head starts (see the module's docstring)
    and the dropout it trains with."""
    import torch

    if config.unigram_bias:
        ids = np.concatenate([np.asarray(row_ids) for row_ids, _ in chunks]) if chunks else np.zeros(0, np.int64)
        counts = np.bincount(ids, minlength=model.config.vocab_size).astype(np.float64) + 0.5  # never log(0)
        with torch.no_grad():
            model.cls.predictions.bias.copy_(torch.from_numpy(np.log(counts / counts.sum())))
    if config.freeze_embeddings:
        model.bert.embeddings.requires_grad_(False)
    for module in model.modules():  # the training's dropout; the saved config keeps the encoder's own
        if isinstance(module, torch.nn.Dropout):
            module.p = config.dropout


def encode_chunks(texts: list[str], tokenizer, max_length: int) -> list[tuple[list[int], list[int | None]]]:
    """Every text as (input ids, word ids) chunks of at most ``max_length`` tokens, none dropped."""
    encoded = tokenizer(texts, truncation=True, max_length=max_length, return_overflowing_tokens=True)
    return [(ids, encoded.word_ids(i)) for i, ids in enumerate(encoded["input_ids"])]


def whole_word_mask(
    ids: list[int], word_ids: list[int | None], tokenizer, rng: np.random.Generator, probability: float
) -> tuple[np.ndarray, np.ndarray]:
    """(masked ids, labels) choosing whole words; chosen tokens go 80% [MASK], 10% random, 10% kept."""
    ids_arr = np.array(ids)
    labels = np.full(len(ids), -100)
    words = sorted({w for w in word_ids if w is not None})
    if not words:
        return ids_arr, labels
    n_chosen = max(1, round(probability * len(words)))
    chosen = set(rng.choice(words, size=min(n_chosen, len(words)), replace=False).tolist())
    positions = np.array([i for i, w in enumerate(word_ids) if w in chosen])
    labels[positions] = ids_arr[positions]
    roll = rng.random(len(positions))
    ids_arr[positions[roll < 0.8]] = tokenizer.mask_token_id
    random_at = positions[(roll >= 0.8) & (roll < 0.9)]
    ids_arr[random_at] = rng.integers(len(tokenizer.all_special_ids), tokenizer.vocab_size, size=len(random_at))
    return ids_arr, labels


def mlm_batches(chunks, tokenizer, config: MlmTrainConfig) -> Iterator[dict]:
    """Endless shuffled, freshly masked, per-batch padded batches, deterministic for ``config.seed``."""
    import torch

    rng = np.random.default_rng(config.seed)
    while True:
        order = rng.permutation(len(chunks))
        for start in range(0, len(order) - config.batch_size + 1 or 1, config.batch_size):
            rows = [chunks[i] for i in order[start : start + config.batch_size]]
            width = max(len(ids) for ids, _ in rows)
            input_ids = np.full((len(rows), width), tokenizer.pad_token_id)
            labels = np.full((len(rows), width), -100)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, (ids, word_ids) in enumerate(rows):
                input_ids[r, : len(ids)], labels[r, : len(ids)] = whole_word_mask(
                    ids, word_ids, tokenizer, rng, config.mask_probability
                )
                mask[r, : len(ids)] = 1
            yield {
                "input_ids": torch.from_numpy(input_ids),
                "attention_mask": torch.from_numpy(mask),
                "labels": torch.from_numpy(labels),
            }


def masked_positions_loss(model, batch: dict):
    """MLM cross-entropy with the vocabulary projection run only at labelled positions.

    The 30k-word output layer dominates a MiniLM step on CPU; skipping the 85% of positions that
    carry no label makes a step several times cheaper with the same gradient.
    """
    import torch

    hidden = model.bert(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    labelled = batch["labels"] != -100
    logits = model.cls(hidden[labelled])
    return torch.nn.functional.cross_entropy(logits, batch["labels"][labelled])
