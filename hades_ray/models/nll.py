"""Per-token negative log-likelihood of next tokens, the one expression RANK, the kit's quality check
and their tests share."""

from __future__ import annotations

import torch


def next_token_nll(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """[rows, positions] NLL of ``targets`` under ``logits`` [rows, positions, vocab].

    The log-softmax runs over the last, contiguous dimension: over dim 1 of the transposed
    [rows, vocab, positions] view it took about 4x as long on a CPU (84 vs 22 ms per 150-position row of
    a 30,522-token vocabulary, one thread). Each row is reduced on its own, so a row's NLL does not
    depend on the other rows (tests/perturb/test_packing.py)."""
    rows, positions, vocab = logits.shape
    flat = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1), reduction="none")
    return flat.view(rows, positions)
