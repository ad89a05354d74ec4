"""Forwards whose results do not depend on what else shares the batch.

On CPU, a matrix product's kernel (and its thread split) changes with the number of rows it
multiplies, and so does the float rounding of each row: below a few dozen rows, a row's result
differs in the last bits from the same row computed inside a larger batch (measured on the offline
kit's MiniLM and GPT-2: mismatches only where rows x tokens < 16 with 2 threads; never at 64 or
more). Equal-length groups keep padding out of the arithmetic; filler rows (copies of the group's
first row, their results dropped) lift every forward to ``MIN_FORWARD_TOKENS`` token rows, and every
head call to ``MIN_HEAD_ROWS`` rows, so a text scores the same alone and inside any batch.
"""

from __future__ import annotations

import torch

MIN_FORWARD_TOKENS = 64
MIN_HEAD_ROWS = 16


def fill_rows(tensors: dict[str, torch.Tensor], minimum_rows: int) -> tuple[dict[str, torch.Tensor], int]:
    """``tensors`` with copies of their first row appended up to ``minimum_rows``; and the real count."""
    real = next(iter(tensors.values())).shape[0]
    if real >= minimum_rows:
        return tensors, real
    extra = minimum_rows - real
    return {k: torch.cat([v, v[:1].expand(extra, *v.shape[1:])]) for k, v in tensors.items()}, real


def backbone_states(backbone, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Last hidden states of equal-length rows, computed with at least ``MIN_FORWARD_TOKENS`` token rows."""
    length = max(1, input_ids.shape[1])
    rows = -(-MIN_FORWARD_TOKENS // length)
    filled, real = fill_rows({"input_ids": input_ids, "attention_mask": attention_mask}, rows)
    return backbone(**filled).last_hidden_state[:real]


def head_probabilities(head, pooled: torch.Tensor) -> torch.Tensor:
    """p(H) from pooled span vectors, the head run on at least ``MIN_HEAD_ROWS`` rows."""
    if pooled.shape[0] == 0:
        return pooled.new_zeros(0)
    filled, real = fill_rows({"x": pooled}, MIN_HEAD_ROWS)
    return torch.softmax(head(filled["x"]).float(), dim=-1)[:real, 1]


def pool_span(states: torch.Tensor, span_mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """Span vectors from states (rows x tokens x hidden) and a boolean span mask, as ``SpanClassifier``."""
    mask = span_mask.unsqueeze(-1)
    if pooling == "mean":
        return (states * mask).sum(1) / mask.sum(1).clamp(min=1)
    return states.masked_fill(~mask, torch.finfo(states.dtype).min).max(1).values
