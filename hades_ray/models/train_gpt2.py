"""The kit's small GPT-2, trained from scratch on the training leads with its own byte-level BPE.

A byte-level BPE reads any cased English (or any byte string) without unknown tokens, and a
vocabulary fitted to the leads keeps the output layer small enough for a CPU build.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from hades_ray.models.training import TrainLimits

END_OF_TEXT = "<|endoftext|>"


@dataclass
class Gpt2TrainConfig:
    # Small on purpose: a few CPU minutes buy more steps, and more steps beat width here.
    vocab_size: int = 4096
    n_layer: int = 4
    n_embd: int = 128
    n_head: int = 4
    n_positions: int = 256  # every position is trained: blocks fill the whole context
    block_size: int = 256
    batch_size: int = 8
    # GPT-2's resid/embd/attn dropout: none. The build sees each training token about twice, too few passes
    # to overfit, so dropout only slowed learning; without it a step also costs half (2 quiet cores,
    # 2026-12-07, held-out perplexity of the 994 held-out leads / the original preferred over a one-word
    # swap, n=500): 750 steps with 0.1 dropout 265.1 / 70.0% (0.32 s a step); 750 without 174.1 / 74.8%
    # (0.20 s); 1200 without 119.6 / 77.0%; 1200 at lr 5e-3 was behind at every step.
    dropout: float = 0.0
    seed: int = 0
    # 1200 steps: ~0.22 s each on 2 quiet cores (measured), under 5 of the build's 10 minutes.
    limits: TrainLimits = field(
        default_factory=lambda: TrainLimits(
            max_steps=1200, lr=3e-3, warmup_fraction=0.02, weight_decay=0.1, log_every=20
        )
    )


def train_bpe_tokenizer(texts: list[str], vocab_size: int, max_length: int = 256):
    """A byte-level BPE fitted to ``texts``, wrapped so ``AutoTokenizer`` reloads it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[END_OF_TEXT],
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token=END_OF_TEXT,
        eos_token=END_OF_TEXT,
        unk_token=END_OF_TEXT,
        pad_token=END_OF_TEXT,
        model_max_length=max_length,
    )


def init_gpt2(tokenizer, config: Gpt2TrainConfig):
    """A randomly initialised ``GPT2LMHeadModel`` sized by ``config`` (seeded)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(config.seed)
    model_config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=config.n_positions,
        n_embd=config.n_embd,
        n_layer=config.n_layer,
        n_head=config.n_head,
        resid_pdrop=config.dropout,
        embd_pdrop=config.dropout,
        attn_pdrop=config.dropout,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.eos_token_id,
    )
    model = GPT2LMHeadModel(model_config)
    # The loss transformers picks by class name: "GPT2LMHeadModel" names none, so it warned and took this one.
    model.loss_type = "ForCausalLM"
    return model


def token_stream(texts: list[str], tokenizer) -> np.ndarray:
    """All texts as one id stream, each preceded by end-of-text, the way GPT-2 saw documents."""
    eos = tokenizer.eos_token_id
    # Whole texts, longer than the context on purpose: blocks are cut from the stream (verbose=False: no
    # warning that a sequence exceeds the model's maximum, which none of these is fed as).
    ids = tokenizer(texts, verbose=False)["input_ids"]
    pieces = [np.array([eos] + row, dtype=np.int64) for row in ids]
    return np.concatenate(pieces)


def gpt2_batches(stream: np.ndarray, config: Gpt2TrainConfig) -> Iterator[dict]:
    """Endless batches of blocks cut at random offsets from the stream (nanoGPT style), seeded."""
    import torch

    rng = np.random.default_rng(config.seed)
    last_start = len(stream) - config.block_size
    while True:
        starts = rng.integers(0, max(last_start, 1), size=config.batch_size)
        block = np.stack([stream[s : s + config.block_size] for s in starts])
        ids = torch.from_numpy(block)
        # No padding: every position is attended. Said with a mask because the pad id is the end-of-text id,
        # which the blocks hold between documents (without one, transformers warns that they may be padded;
        # the forward is the same bit for bit).
        yield {"input_ids": ids, "labels": ids, "attention_mask": torch.ones_like(ids)}
