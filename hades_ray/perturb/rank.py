"""RANK: perplexity of every candidate under a causal LM; the most fluent candidate is kept."""

from __future__ import annotations

import math

import torch

from hades_ray.models.fixed_rows import MIN_FORWARD_TOKENS, MIN_HEAD_ROWS, fill_rows
from hades_ray.models.nll import next_token_nll
from hades_ray.perturb.packing import Packing, body_rows, model_positions, packing_of
from hades_ray.perturb.settings import RankConfig


def encode_for_perplexity(tokenizer, texts: list[str], max_length: int) -> list[list[int]]:
    """Token ids per text, starting with BOS where the model has one so the first word is scored too."""
    encoded = tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]
    bos = tokenizer.bos_token_id
    if bos is None:
        return [list(ids) for ids in encoded]
    return [list(ids) if ids and ids[0] == bos else [bos, *ids][:max_length] for ids in encoded]


def length_chunks(lengths: list[int], packing: Packing | None = None) -> list[list[int]]:
    """The indices of each forward ``perplexities`` makes: sequences by width (shortest first, then in
    input order), as many rows as the width allows within the token budget. A pure function of the
    lengths, so the planner counts the very same forwards."""
    packing = packing or Packing()
    order = sorted(range(len(lengths)), key=lambda i: (packing.width(lengths[i]), i))
    chunks, begin = [], 0
    while begin < len(order):
        width = packing.width(lengths[order[begin]])
        same = [i for i in order[begin : begin + packing.rows(width)] if packing.width(lengths[i]) == width]
        chunks.append(same)
        begin += len(same)
    return chunks


def forward_shapes(lengths: list[int], packing: Packing | None = None) -> list[tuple[int, int]]:
    """(rows, width) of each forward ``perplexities`` makes for sequences of these lengths."""
    packing = packing or Packing()
    shapes = []
    for chunk in length_chunks(lengths, packing):
        width = packing.width(max(lengths[i] for i in chunk))
        shapes.append((body_rows(len(chunk), packing, width), width))  # filler rows included
    return shapes


@torch.inference_mode()
def perplexities(model, token_ids: list[list[int]], pad_id: int, config: RankConfig | None = None) -> list[float]:
    """exp(mean next-token NLL) of each sequence, in forwards packed as ``config`` says
    (hades_ray/perturb/packing.py); results keep the input order."""
    config = config or RankConfig()
    device = next(model.parameters()).device
    packing = packing_of(config, device.type, model_positions(model))
    lengths = [len(ids) for ids in token_ids]
    result = [math.nan] * len(token_ids)
    for chunk in length_chunks(lengths, packing):
        width = packing.width(max(lengths[i] for i in chunk))
        rows = packing.rows(width) if packing.fixed_rows else len(chunk)
        ids = torch.full((rows, width), pad_id, dtype=torch.long)
        attention = torch.zeros((rows, width), dtype=torch.long)
        attention[:, 0] = 1  # dummy rows see one token (a row with none is NaN in some attention kernels)
        for row, index in enumerate(chunk):
            ids[row, : lengths[index]] = torch.tensor(token_ids[index])
            attention[row, : lengths[index]] = 1
        nll = _next_token_nll(model, ids.to(device), attention.to(device), config.logits_mb)
        valid = attention[:, 1:].to(device).float()
        mean_nll = (nll * valid).sum(dim=1) / valid.sum(dim=1).clamp(min=1)
        for row, index in enumerate(chunk):
            result[index] = float(torch.exp(mean_nll[row]))
    return result


def _next_token_nll(model, ids: torch.Tensor, attention: torch.Tensor, logits_mb: int) -> torch.Tensor:
    """[rows, width - 1] NLL of each next token. The vocabulary projection and its log-softmax run
    a few whole rows at a time (``head_nll``). Whole rows, and forwards and projections above the row
    counts of hades_ray/models/fixed_rows.py, keep every bit of one pass over all rows
    (tests/perturb/test_packing.py); the last position predicts nothing and is not projected."""
    head = model.get_output_embeddings()
    if head is None:  # no separate projection to chunk: the whole forward, as before
        logits = model(input_ids=ids, attention_mask=attention).logits.float()
        return next_token_nll(logits[:, :-1], ids[:, 1:])
    filled, real = fill_rows({"input_ids": ids, "attention_mask": attention}, -(-MIN_FORWARD_TOKENS // ids.shape[1]))
    hidden = model.base_model(**filled)[0][:real, :-1]
    return head_nll(head, hidden, ids[:, 1:], logits_mb)


def head_nll(head, hidden: torch.Tensor, targets: torch.Tensor, logits_mb: int) -> torch.Tensor:
    """[rows, positions] NLL of ``targets`` under ``head(hidden)``, projected a few whole rows at a time,
    so that the logits and their log-probabilities together take at most ``logits_mb`` MB (or one
    row's, where one row alone takes more), and never on fewer than MIN_HEAD_ROWS row positions."""
    positions = max(hidden.shape[1], 1)
    row_bytes = 2 * 4 * head.weight.shape[0] * positions  # float32 logits and their log-softmax
    per_chunk = max(logits_mb * 2**20 // row_bytes, -(-MIN_HEAD_ROWS // positions), 1)
    losses = []
    for begin in range(0, hidden.shape[0], per_chunk):
        logits = head(hidden[begin : begin + per_chunk]).float()
        losses.append(next_token_nll(logits, targets[begin : begin + per_chunk]))
    return torch.cat(losses)


def most_fluent(ppls: list[float]) -> int:
    """Index of the lowest perplexity; ties go to the earliest candidate."""
    return min(range(len(ppls)), key=lambda i: (ppls[i], i))


def perplexity_change(before: dict[str, list[float]], after: dict[str, list[float]]) -> dict:
    """How far two runs' perplexities of the same documents' candidates lie apart: the documents both
    scored, those whose kept (most fluent) candidate differs, the largest relative difference, and how close
    ``before``'s closest calls were (its best candidate against its second, relative)."""
    shared = sorted(set(before) & set(after))
    differ = [d for d in shared if most_fluent(before[d]) != most_fluent(after[d])]
    largest = max((abs(b - a) / abs(a) for d in shared for a, b in zip(before[d], after[d])), default=0.0)
    gaps = [(r[1] - r[0]) / r[0] for r in (sorted(before[d]) for d in shared) if len(r) > 1]
    out = {"documents": len(shared), "kept_candidate_differs": differ, "max_relative_difference": largest}
    return out | {"smallest_best_gap_relative": min(gaps, default=None), "gaps_below_1e-5": sum(g < 1e-5 for g in gaps)}
