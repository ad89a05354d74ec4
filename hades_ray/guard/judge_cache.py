"""Per-row key/value caches of a causal backbone, extended for many rows in one forward.

Each row holds the token ids it has run and their keys and values (one ``[1, heads, tokens, dim]``
pair per layer). A step's forward packs every row into one sequence: the rows' caches side by side,
then the rows' new tokens side by side, with a mask that lets each new token see only its own row's
cached tokens and its own row's earlier new tokens, and each row's positions counted from its own
cache length. Every real token therefore sees exactly what it sees in a forward over its row alone,
and a step costs one forward over its new tokens whatever their count per row: a window encoded
from its start (many tokens) and a word added to a cache (one or two) share that forward, and no
row is padded to another's length.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


def cache_of(out):
    """The key/value cache of a model's output (``cache`` in newer transformers, ``past_key_values`` before)."""
    return out.cache if hasattr(out, "cache") else out.past_key_values


@dataclass
class RowCache:
    lo: int | None = None  # the first word of the window the cache encodes
    ids: list[int] = field(default_factory=list)
    kv: list[tuple[torch.Tensor, torch.Tensor]] = field(default_factory=list)

    def reuse(self, lo: int, ids: list[int], limit: int) -> int:
        """Keep the longest prefix of the cache that ``ids`` (window ``lo``'s tokens) starts with, at most
        ``limit`` tokens; returns how many tokens are kept."""
        keep = 0
        if self.lo == lo:
            bound = min(len(self.ids), len(ids), limit)
            while keep < bound and self.ids[keep] == ids[keep]:
                keep += 1
        self.lo, self.ids = lo, self.ids[:keep]
        self.kv = [(k[:, :, :keep], v[:, :, :keep]) for k, v in self.kv] if keep else []
        return keep


def extend_caches(backbone, caches: list[RowCache], feeds: list[list[int]], device) -> list[torch.Tensor]:
    """Run each row's ``feeds[r]`` after the tokens its cache holds (a prefix of it), all rows in one
    forward; the caches grow by them. Returns each row's last hidden states of its new tokens
    (``[new, hidden]``)."""
    from transformers.cache_utils import DynamicCache

    past = [len(c.ids) for c in caches]
    new = [len(f) - p for f, p in zip(feeds, past)]
    width = sum(past)
    ids = torch.tensor([[t for f, p in zip(feeds, past) for t in f[p:]]], device=device)
    positions = torch.tensor([[i for p, n in zip(past, new) for i in range(p, p + n)]], device=device)
    dtype = next(backbone.parameters()).dtype
    cache = DynamicCache()
    if width:
        held = [c for c in caches if c.kv]
        layers = [
            (torch.cat([c.kv[k][0] for c in held], dim=2), torch.cat([c.kv[k][1] for c in held], dim=2))
            for k in range(len(held[0].kv))
        ]
        cache = DynamicCache(ddp_cache_data=layers)
    out = backbone(
        input_ids=ids,
        attention_mask=_packed_mask(past, new, dtype).to(device),
        position_ids=positions,
        cache=cache,
        use_cache=True,
    )
    grown, states = cache_of(out), []
    at_past, at_new = 0, width
    for c, feed, p, n in zip(caches, feeds, past, new):
        c.kv = [
            (
                torch.cat([layer.keys[:, :, at_past : at_past + p], layer.keys[:, :, at_new : at_new + n]], dim=2),
                torch.cat([layer.values[:, :, at_past : at_past + p], layer.values[:, :, at_new : at_new + n]], dim=2),
            )
            for layer in grown.layers
        ]
        c.ids = list(feed)
        states.append(out.last_hidden_state[0, at_new - width : at_new - width + n])
        at_past, at_new = at_past + p, at_new + n
    return states


def _packed_mask(past: list[int], new: list[int], dtype) -> torch.Tensor:
    """The additive ``[1, 1, new tokens, cached + new tokens]`` mask of a packed forward: 0 where a new
    token may look (its row's cache, its row's new tokens up to itself), the dtype's minimum elsewhere."""
    width, length = sum(past), sum(new)
    allowed = torch.zeros((length, width + length), dtype=torch.bool)
    at_past, at_new = 0, 0
    for p, n in zip(past, new):
        allowed[at_new : at_new + n, at_past : at_past + p] = True
        allowed[at_new : at_new + n, width + at_new : width + at_new + n] = torch.ones(n, n, dtype=torch.bool).tril()
        at_past, at_new = at_past + p, at_new + n
    mask = torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)
    return mask[None, None]
