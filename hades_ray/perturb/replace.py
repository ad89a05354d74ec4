"""REPLACE: fill [MASK] positions left to right with a masked LM, one position per step.

"[MASK] [MASK] [MASK] -> [A] [MASK] [MASK] -> [A] [B] [MASK] -> [A] [B] [C]": at each step every
sequence that still has a mask fills its leftmost one, so a batch of all candidates of many texts
costs one forward per step. The original token is removed from the distribution at each position.
Draws come from one generator per candidate, so a sequence's result never depends on its batch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from hades_ray.config import ReplaceConfig

NEG_INF = float("-inf")


@dataclass
class MaskedSequence:
    input_ids: list[int]  # with [MASK] at every position to fill
    positions: list[int]  # ascending
    original_ids: list[int]  # the original token at each position
    span_starts: frozenset[int]  # positions that begin a word span
    rng: np.random.Generator


def vocabulary_bans(
    tokenizer, vocab_size: int, stop_words: frozenset[str] | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(banned anywhere, banned at a span's first position) as boolean vectors over the vocabulary.
    Special and unused tokens never fill a mask; a span never starts with a word piece, punctuation,
    or (given ``stop_words``) a stop word."""
    stop_words = stop_words or frozenset()
    tokens = tokenizer.convert_ids_to_tokens(list(range(min(vocab_size, len(tokenizer)))))
    special = set(tokenizer.all_special_ids)
    anywhere = torch.ones(vocab_size, dtype=torch.bool)  # ids past the tokenizer's vocabulary stay banned
    at_start = torch.ones(vocab_size, dtype=torch.bool)
    for index, token in enumerate(tokens):
        text = (token or "").replace("Ġ", "").replace("▁", "")
        unusable = index in special or token is None or text.startswith(("[unused", "<unused")) or not text
        anywhere[index] = unusable
        at_start[index] = (
            unusable or token.startswith("##") or not any(c.isalnum() for c in text) or text.lower() in stop_words
        )
    return anywhere, at_start


def _mlm_logits_at(
    model, input_ids: torch.Tensor, attention: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor
) -> torch.Tensor:
    """Logits at one position per row; the vocabulary projection runs only where it is needed."""
    head = next((getattr(model, name) for name in ("cls", "lm_head") if hasattr(model, name)), None)
    if head is None:
        return model(input_ids=input_ids, attention_mask=attention).logits[rows, cols]
    hidden = model.base_model(input_ids=input_ids, attention_mask=attention)[0]
    return head(hidden[rows, cols])


def choose_tokens(logits: torch.Tensor, uniforms: np.ndarray, config: ReplaceConfig) -> torch.Tensor:
    """One token per row from banned-out logits by the configured decoding (inverse-CDF sampling)."""
    if config.decoding == "greedy":
        return logits.argmax(dim=-1)
    logits = logits.double() / config.temperature
    if config.decoding == "top_k":
        values, indices = logits.topk(min(config.top_k, logits.shape[-1]), dim=-1)
        probs = values.softmax(dim=-1)
    else:
        values, indices = logits.sort(dim=-1, descending=True)
        probs = values.softmax(dim=-1)
        keep = (probs.cumsum(dim=-1) - probs) < config.top_p  # the smallest prefix reaching top_p
        probs = torch.where(keep, probs, torch.zeros_like(probs))
        probs = probs / probs.sum(dim=-1, keepdim=True)
    cdf = probs.cumsum(dim=-1)
    u = torch.as_tensor(uniforms, dtype=cdf.dtype).unsqueeze(-1) * cdf[:, -1:]
    picks = torch.searchsorted(cdf, u).clamp_(max=probs.shape[-1] - 1)
    return indices.gather(-1, picks).squeeze(-1)


def fill_masks(
    model,
    sequences: list[MaskedSequence],
    config: ReplaceConfig,
    bans: tuple[torch.Tensor, torch.Tensor],
    pad_id: int,
    max_batch_tokens: int = 32_768,
    timings: dict | None = None,
) -> list[list[int]]:
    """Token ids chosen for each sequence's positions, left to right; ``timings["forward"]``
    accumulates the seconds spent inside model forwards."""
    device = next(model.parameters()).device
    anywhere, at_start = (b.to(device) for b in bans)
    width = max(len(s.input_ids) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq.input_ids)] = torch.tensor(seq.input_ids)
    lengths = torch.tensor([len(s.input_ids) for s in sequences])
    chosen: list[list[int]] = [[] for _ in sequences]
    for step in range(max((len(s.positions) for s in sequences), default=0)):
        active = [row for row, seq in enumerate(sequences) if step < len(seq.positions)]
        rows_per_chunk = max(1, max_batch_tokens // int(lengths[active].max()))
        for begin in range(0, len(active), rows_per_chunk):
            chunk = active[begin : begin + rows_per_chunk]
            picks = _step(model, ids, lengths, sequences, chunk, step, config, anywhere, at_start, device, timings)
            for row, token in zip(chunk, picks):
                ids[row, sequences[row].positions[step]] = token
                chosen[row].append(token)
    return chosen


@torch.inference_mode()
def _step(model, ids, lengths, sequences, chunk, step, config, anywhere, at_start, device, timings) -> list[int]:
    span = int(lengths[chunk].max())
    batch = ids[chunk, :span].to(device)
    attention = (torch.arange(span).unsqueeze(0) < lengths[chunk].unsqueeze(1)).long().to(device)
    cols = torch.tensor([sequences[r].positions[step] for r in chunk], device=device)
    rows = torch.arange(len(chunk), device=device)
    started = time.perf_counter()
    logits = _mlm_logits_at(model, batch, attention, rows, cols).float()
    if device.type == "cuda":
        torch.cuda.synchronize()
    if timings is not None:
        timings["forward"] = timings.get("forward", 0.0) + time.perf_counter() - started
    logits = logits[:, : anywhere.shape[0]].masked_fill(anywhere, NEG_INF)
    starts = torch.tensor([sequences[r].positions[step] in sequences[r].span_starts for r in chunk], device=device)
    logits = torch.where(starts.unsqueeze(1) & at_start.unsqueeze(0), NEG_INF, logits)
    originals = torch.tensor([sequences[r].original_ids[step] for r in chunk], device=device)
    logits[rows, originals] = NEG_INF
    uniforms = np.array([sequences[r].rng.random() for r in chunk])
    return choose_tokens(logits, uniforms, config).tolist()
