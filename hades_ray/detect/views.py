"""Scoring many spans per forward: each distinct text a detector sees is encoded and run once, and
every target span in it is pooled from that one set of hidden states.

Offline, a target's view is the text around it cut to the detector's window
(``hades_ray/detect/spans.py``): every word of a text that fits the window has the same view, the
whole text, so one forward scores all of them. Online, each word's view ends at the word, and only a
causal backbone lets one forward serve them all (``hades_ray/detect/causal.py``). Span masks follow
``encode_spans``: the tokens whose characters overlap the span.
"""

from __future__ import annotations

import numpy as np
import torch

from hades_ray.detect.settings import TOKENS
from hades_ray.detect.spans import context_window
from hades_ray.detect.stable import backbone_states, head_probabilities, pool_span


def overlap_mask(offsets: list[tuple[int, int]], start: int, end: int) -> np.ndarray:
    """Tokens overlapping characters ``[start, end)``; the last token when none does (as ``encode_spans``)."""
    mask = np.array([b > a and a < end and b > start for a, b in offsets], dtype=bool)
    if not mask.any():
        mask[len(offsets) - 1] = True
    return mask


def score_spans(
    model, tokenizer, items: list[dict], mode: str, window: int, forward_batch: int = 32, unit: str = TOKENS
) -> np.ndarray:
    """p(H) of ``{"words", "start", "end"}`` items, each in its own view (each distinct view run once)."""
    model.eval()
    if not items:
        return np.zeros(0, dtype=np.float64)
    jobs, places = shared_views(tokenizer, items, mode, window, unit)
    p = score_views(model, jobs, forward_batch)
    return np.array([p[job][row] for job, row in places], dtype=np.float64)


def shared_views(
    tokenizer, items: list[dict], mode: str, window: int, unit: str = TOKENS
) -> tuple[list[dict], list[tuple[int, int]]]:
    """Jobs ``{"ids", "masks"}``, one per distinct view of ``items``; and each item's (job, row in masks)."""
    jobs: list[dict] = []
    index: dict[str, int] = {}
    places: list[tuple[int, int]] = []
    for item in items:
        view = context_window(tokenizer, item["words"], item["start"], item["end"], mode, window, unit)
        if view["text"] not in index:
            enc = tokenizer(view["text"], return_offsets_mapping=True)
            index[view["text"]] = len(jobs)
            jobs.append({"ids": list(enc["input_ids"]), "offsets": list(enc["offset_mapping"]), "masks": []})
        job = jobs[index[view["text"]]]
        places.append((index[view["text"]], len(job["masks"])))
        job["masks"].append(overlap_mask(job["offsets"], view["char_start"], view["char_end"]))
    return jobs, places


def _span_forwards(backbone, jobs: list[dict], forward_batch: int):
    """Each forward of ``jobs`` ``{"ids", "masks"}``: views of equal token length share one, with enough
    rows that the result does not depend on what else is in it. Yields (the chunk's job indices, each
    mask's row of hidden states, the masks), in the order every caller splits results back by."""
    device = next(backbone.parameters()).device
    by_length: dict[int, list[int]] = {}
    for k, job in enumerate(jobs):
        by_length.setdefault(len(job["ids"]), []).append(k)
    for _, members in sorted(by_length.items()):
        for lo in range(0, len(members), forward_batch):
            chunk = [k for k in members[lo : lo + forward_batch] if len(jobs[k]["masks"])]
            if not chunk:
                continue
            ids = torch.tensor([jobs[k]["ids"] for k in chunk], device=device)
            states = backbone_states(backbone, ids, torch.ones_like(ids))
            rows = [r for r, k in enumerate(chunk) for _ in jobs[k]["masks"]]
            span_mask = torch.as_tensor(np.stack([m for k in chunk for m in jobs[k]["masks"]]), device=device)
            yield chunk, states[torch.as_tensor(rows, device=device)], span_mask


def _split(values, chunk: list[int], jobs: list[dict]):
    """``values`` (one per mask of the chunk's jobs, in order) cut back into each job's share."""
    cursor = 0
    for k in chunk:
        yield k, values[cursor : cursor + len(jobs[k]["masks"])]
        cursor += len(jobs[k]["masks"])


@torch.no_grad()
def score_views(model, jobs: list[dict], forward_batch: int) -> list[np.ndarray]:
    """p(H) of every mask of every job ``{"ids", "masks"}`` (``_span_forwards``' groups)."""
    results = [np.zeros(len(j["masks"])) for j in jobs]
    for chunk, picked, span_mask in _span_forwards(model.backbone, jobs, forward_batch):
        pooled = pool_span(picked, span_mask, model.pooling)
        p = head_probabilities(model.head, pooled).cpu().numpy().astype(np.float64)
        for k, share in _split(p, chunk, jobs):
            results[k] = share
    return results


@torch.no_grad()
def pool_views(backbone, jobs: list[dict], forward_batch: int, poolings: tuple[str, ...]) -> list[dict]:
    """Pooled span vectors of every mask of every job, one array ``[masks, hidden]`` per pooling: what
    ``score_views`` hands the head, from one forward for all poolings (the span-representation store,
    ``hades_ray/detect/reps.py``). The same groups and forwards as ``score_views``, so the vectors are the
    ones the live path pools."""
    results: list[dict] = [{} for _ in jobs]
    for chunk, picked, span_mask in _span_forwards(backbone, jobs, forward_batch):
        for pooling in poolings:
            pooled = pool_span(picked, span_mask, pooling).float().cpu().numpy()
            for k, share in _split(pooled, chunk, jobs):
                results[k][pooling] = share
    return results
