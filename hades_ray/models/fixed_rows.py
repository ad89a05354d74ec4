"""Row counts below which a forward's result depends on what else shares the batch.

On CPU, a matrix product's kernel (and its thread split) changes with the number of rows it
multiplies, and so does the float rounding of each row: below a few dozen rows, a row's result
differs in the last bits from the same row computed inside a larger batch (measured on the offline
kit's MiniLM and GPT-2: mismatches only where rows x tokens < 16 with 2 threads; never at 64 or
more; with 1 thread a vocabulary projection on 1 or 2 rows differs from one on 4 or more). Filler
rows (copies of the first row, their results dropped) lift every forward to ``MIN_FORWARD_TOKENS``
token rows and every head call to ``MIN_HEAD_ROWS`` rows. Used by the detectors
(hades_ray/detect/stable.py), by REPLACE and RANK (hades_ray/perturb/packing.py) and by the kit's
quality measures (hades_ray/models/quality.py).
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


def mlm_logits_at(
    model, input_ids: torch.Tensor, attention: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor, at_least: int
) -> torch.Tensor:
    """A masked LM's logits at one position per row: the vocabulary projection, which dominates the
    forward, runs only at those positions, on at least ``at_least`` rows (see above)."""
    head = next((getattr(model, name) for name in ("cls", "lm_head") if hasattr(model, name)), None)
    if head is None:
        return model(input_ids=input_ids, attention_mask=attention).logits[rows, cols]
    hidden = model.base_model(input_ids=input_ids, attention_mask=attention)[0][rows, cols]
    filled, real = fill_rows({"hidden": hidden}, at_least)
    return head(filled["hidden"])[:real]
