"""One training loop shared by the kit's models: AdamW, warmup, cosine decay, a fixed number of steps.

Steps, not minutes, end a default run, so the same seed gives the same weights on the same machine
type and dtype however busy the machine is. An optional wall-clock box (``max_seconds``, the CLI's
``--mlm-minutes``/``--gpt2-minutes``) cuts a run short for a quick kit; the decay then follows
whichever limit binds first, so a cut run still ends at a low learning rate, but it is no longer
reproducible.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass
class TrainLimits:
    max_steps: int
    max_seconds: float | None = None  # None or <= 0 (the default): steps only, reproducible
    lr: float = 1e-3
    warmup_fraction: float = 0.05
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    log_every: int = 50
    fresh_prefixes: tuple[str, ...] = ()  # parameter names starting so were freshly initialised
    fresh_lr_scale: float = 1.0  # they learn this much faster than the pretrained rest


def lr_factor(progress: float, warmup_fraction: float, min_ratio: float) -> float:
    """Learning-rate multiplier at ``progress`` in [0, 1]: linear warmup, then cosine to ``min_ratio``."""
    if progress < warmup_fraction:
        return max(progress / warmup_fraction, 1e-3)
    span = (progress - warmup_fraction) / max(1.0 - warmup_fraction, 1e-9)
    return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * min(span, 1.0)))


def _progress(step: int, started: float, limits: TrainLimits) -> float:
    by_steps = step / max(limits.max_steps, 1)
    if not limits.max_seconds or limits.max_seconds <= 0:
        return by_steps
    return max(by_steps, (time.perf_counter() - started) / limits.max_seconds)


def _optimizer(model, limits: TrainLimits):
    import torch

    groups: dict[tuple[bool, bool], list] = {}
    for name, param in model.named_parameters():
        if param.requires_grad:
            fresh = bool(limits.fresh_prefixes) and name.startswith(limits.fresh_prefixes)
            groups.setdefault((fresh, param.dim() >= 2), []).append(param)
    # Biases and LayerNorm weights are not decayed, as in BERT and nanoGPT.
    param_groups = [
        {
            "params": params,
            "weight_decay": limits.weight_decay if matrix else 0.0,
            "lr_scale": limits.fresh_lr_scale if fresh else 1.0,
        }
        for (fresh, matrix), params in groups.items()
    ]
    return torch.optim.AdamW(param_groups, lr=limits.lr, betas=(0.9, 0.98), eps=1e-6)


def model_loss(model, batch: dict):
    """The model's own loss for a batch that carries ``labels``."""
    return model(**batch).loss


def train_model(model, batches: Iterator[dict], limits: TrainLimits, loss_fn: Callable = model_loss) -> dict:
    """Train ``model`` on ``batches`` with ``loss_fn(model, batch)`` for ``max_steps`` (or until the time box)."""
    import torch

    model.train()
    optimizer = _optimizer(model, limits)
    started, cpu_started, step, recent = time.perf_counter(), time.process_time(), 0, []
    while step < limits.max_steps:
        progress = _progress(step, started, limits)
        if progress >= 1.0:
            break
        factor = lr_factor(progress, limits.warmup_fraction, limits.min_lr_ratio)
        for group in optimizer.param_groups:
            group["lr"] = limits.lr * group["lr_scale"] * factor
        loss = loss_fn(model, next(batches))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), limits.grad_clip)
        optimizer.step()
        step += 1
        recent = (recent + [loss.item()])[-limits.log_every :]
        if step % limits.log_every == 0:
            log.info("step %d loss %.3f (%.0fs)", step, sum(recent) / len(recent), time.perf_counter() - started)
    model.eval()
    final = sum(recent) / len(recent) if recent else float("nan")
    # CPU seconds beside wall seconds show how much a shared machine slowed the run.
    return {
        "steps": step,
        "seconds": round(time.perf_counter() - started, 1),
        "cpu_seconds": round(time.process_time() - cpu_started, 1),
        "final_loss": round(final, 4),
    }
