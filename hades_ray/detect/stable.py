"""Forwards whose results do not depend on what else shares the batch.

Equal-length groups keep padding out of the arithmetic; filler rows lift every forward and every
head call above the row counts at which a row's rounding depends on its neighbours
(hades_ray/models/fixed_rows.py), so a text scores the same alone and inside any batch.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch

from hades_ray.models.fixed_rows import MIN_FORWARD_TOKENS, MIN_HEAD_ROWS, fill_rows


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


@contextmanager
def torch_threads(threads: int):
    """Run with ``threads`` intra-op threads (0: as they are), then restore them. A CPU forward's
    rounding depends on how many threads split it, so the Python API scores with the threads the
    score job's actors use (``detect.torch_threads``): the same bits as ``hades-ray score``."""
    before = torch.get_num_threads()
    if threads and threads != before:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
