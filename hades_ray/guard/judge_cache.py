"""Per-row key/value caches of a causal backbone, extended for many rows in one forward.

Each row holds the token ids it has run and their keys and values (one ``[1, heads, tokens, dim]``
pair per layer). A forward lines the rows up: caches padded on the left, new tokens padded on the
right, both pads masked out, each row's positions counted from its own cache length, so every real
token sees exactly its row's earlier tokens, as in one forward over the row alone. Rows with many new
tokens (a window encoded from its start) run apart from rows adding a word, so a prefill does not pad
every other row to its length.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

PREFILL_TOKENS = 8  # rows with more new tokens than this (a window encoded afresh) run in their own forward


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


def extend_caches(backbone, caches: list[RowCache], feeds: list[list[int]], keeps: list[int], device) -> list:
    """Run each row's ``feeds[r][keeps[r]:]`` after its cache; the caches grow by them. Returns each row's
    last hidden states of its new tokens (``[new, hidden]``)."""
    states: list = [None] * len(caches)
    small = [r for r in range(len(caches)) if len(feeds[r]) - keeps[r] <= PREFILL_TOKENS]
    large = [r for r in range(len(caches)) if len(feeds[r]) - keeps[r] > PREFILL_TOKENS]
    for group in (small, large):
        if group:
            for r, s in zip(group, _forward(backbone, [caches[r] for r in group], [feeds[r] for r in group], device)):
                states[r] = s
    return states


def _forward(backbone, caches: list[RowCache], feeds: list[list[int]], device) -> list[torch.Tensor]:
    from transformers.cache_utils import DynamicCache

    past = [len(c.ids) for c in caches]
    new = [len(f) - p for f, p in zip(feeds, past)]
    width, length, rows = max(past), max(new), len(caches)
    ids = torch.zeros((rows, length), dtype=torch.long)
    positions = torch.zeros((rows, length), dtype=torch.long)
    mask = torch.zeros((rows, width + length), dtype=torch.long)
    for r, (feed, p, n) in enumerate(zip(feeds, past, new)):
        ids[r, :n] = torch.tensor(feed[p:])
        positions[r, :n] = torch.arange(p, p + n)
        mask[r, width - p : width + n] = 1
    cache = DynamicCache()
    if width:
        layers = [_stack([c.kv[layer] if c.kv else None for c in caches], width) for layer in range(_depth(caches))]
        cache = DynamicCache(ddp_cache_data=layers)
    out = backbone(
        input_ids=ids.to(device),
        attention_mask=mask.to(device),
        position_ids=positions.to(device),
        cache=cache,
        use_cache=True,
    )
    grown = cache_of(out)
    for r, (c, feed, p, n) in enumerate(zip(caches, feeds, past, new)):
        c.kv = [
            (layer.keys[r : r + 1, :, width - p : width + n], layer.values[r : r + 1, :, width - p : width + n])
            for layer in grown.layers
        ]
        c.ids = list(feed)
    return [out.last_hidden_state[r, :n] for r, n in enumerate(new)]


def _depth(caches: list[RowCache]) -> int:
    return next(len(c.kv) for c in caches if c.kv)


def _stack(pairs: list, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One layer's keys and values of every row, each left-padded with zeros to ``width`` tokens."""
    like = next(p for p in pairs if p is not None)[0]
    heads, dim = like.shape[1], like.shape[3]
    out = []
    for which in (0, 1):
        parts = []
        for p in pairs:
            have = 0 if p is None else p[which].shape[2]
            pad = like.new_zeros((1, heads, width - have, dim))
            parts.append(pad if p is None else torch.cat([pad, p[which]], dim=2))
        out.append(torch.cat(parts))
    return out[0], out[1]
