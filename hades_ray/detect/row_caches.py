"""Per-row key/value caches of a causal backbone, extended for many rows in one forward.

Every row owns a fixed run of ``cap`` columns in one buffer per layer (``[1, heads, rows * cap, dim]``):
its cached tokens' keys and values from the run's first column on, the rest unused. A step's forward
takes the cached columns of the rows it extends as its past (one indexed gather per layer) and the
rows' new tokens side by side, with a mask that lets each new
token see only its own row's cached tokens and its own row's earlier new tokens, and positions counted
from its row's cache length. Every real token therefore sees exactly what it sees in a forward over its
row alone, and a step costs one forward over its new tokens whatever their count per row: a window
encoded from its start (many tokens) and a word added to a cache (one or two) share that forward, and no
row is padded to another's length. The new tokens' keys and values are then copied into their rows'
runs (one indexed copy per layer), and cutting a cache back only shortens its row's length.
"""

from __future__ import annotations

import torch


def cache_of(out):
    """The key/value cache of a model's output (``cache`` in newer transformers, ``past_key_values`` before)."""
    return out.cache if hasattr(out, "cache") else out.past_key_values


class RowCaches:
    """The caches of ``rows`` rows, each at most ``cap`` tokens (a window's tokens); a row's cache belongs
    to one window (``lo``) and holds the ids it has run."""

    def __init__(self, rows: int, cap: int):
        self.cap = cap
        self.lo: list[int | None] = [None] * rows
        self.ids: list[list[int]] = [[] for _ in range(rows)]
        self.kv: list[tuple[torch.Tensor, torch.Tensor]] = []  # per layer, allocated at the first forward

    def reuse(self, row: int, lo: int, ids: list[int], limit: int) -> int:
        """Keep the longest prefix of row's cache that ``ids`` (window ``lo``'s tokens) starts with, at most
        ``limit`` tokens; returns how many tokens are kept."""
        keep, held = 0, self.ids[row]
        if self.lo[row] == lo:
            bound = min(len(held), len(ids), limit)
            while keep < bound and held[keep] == ids[keep]:
                keep += 1
        self.lo[row], self.ids[row] = lo, held[:keep]
        return keep

    def extend(self, backbone, rows: list[int], feeds: list[list[int]], device) -> list[torch.Tensor]:
        """Run each row's ``feeds[k]`` after the tokens its cache holds (a prefix of it), all rows in one
        forward; the caches grow by them. Returns each row's last hidden states of its new tokens
        (``[new, hidden]``)."""
        from transformers.cache_utils import DynamicCache

        self._fit(max(len(f) for f in feeds))
        past = [len(self.ids[r]) for r in rows]
        new = [len(f) - p for f, p in zip(feeds, past)]
        ids = torch.tensor([[t for f, p in zip(feeds, past) for t in f[p:]]], device=device)
        positions = torch.tensor([[i for p, n in zip(past, new) for i in range(p, p + n)]], device=device)
        dtype = next(backbone.parameters()).dtype
        held = torch.tensor([r * self.cap + i for r, p in zip(rows, past) for i in range(p)], device=device)
        cache = DynamicCache()
        if len(held):  # only the rows' cached columns: the attention never spans unused ones
            cache.layers = [_filled_layer(k.index_select(2, held), v.index_select(2, held)) for k, v in self.kv]
        out = backbone(
            input_ids=ids,
            attention_mask=_packed_mask(past, new, dtype).to(device),
            position_ids=positions,
            cache=cache,
            use_cache=True,
        )
        grown = cache_of(out).layers
        if not self.kv:
            size = len(self.ids) * self.cap
            self.kv = [(_runs(layer.keys, size), _runs(layer.values, size)) for layer in grown]
        columns = [r * self.cap + i for r, p, n in zip(rows, past, new) for i in range(p, p + n)]
        columns = torch.tensor(columns, device=device)
        for (keys, values), layer in zip(self.kv, grown):
            keys.index_copy_(2, columns, layer.keys[:, :, len(held) :])
            values.index_copy_(2, columns, layer.values[:, :, len(held) :])
        states, at = [], 0
        for r, feed, n in zip(rows, feeds, new):
            self.ids[r] = list(feed)
            states.append(out.last_hidden_state[0, at : at + n])
            at += n
        return states

    def _fit(self, tokens: int) -> None:
        """Widen every row's run to hold ``tokens`` (a window re-encoded can outgrow the window's budget by
        a token or two where words tokenize differently on their own)."""
        if tokens <= self.cap:
            return
        wider = tokens + 8
        rows = len(self.ids)
        for k, pair in enumerate(self.kv):
            self.kv[k] = tuple(
                torch.nn.functional.pad(
                    t.view(*t.shape[:2], rows, self.cap, t.shape[3]), (0, 0, 0, wider - self.cap)
                ).reshape(*t.shape[:2], rows * wider, t.shape[3])
                for t in pair
            )
        self.cap = wider


def _filled_layer(keys: torch.Tensor, values: torch.Tensor):
    """A ``DynamicLayer`` holding ``keys`` and ``values`` as they are (``DynamicCache(ddp_cache_data=...)``
    would copy them once more, concatenated to an empty tensor)."""
    from transformers.cache_utils import DynamicLayer

    layer = DynamicLayer()
    layer.lazy_initialization(keys, values)
    layer.keys, layer.values = keys, values
    return layer


def _packed_mask(past: list[int], new: list[int], dtype) -> torch.Tensor:
    """The additive ``[1, 1, new tokens, cached + new tokens]`` mask of a packed forward: 0 where a new
    token may look (its row's cache, its row's new tokens up to itself), the dtype's minimum elsewhere."""
    token_row = torch.tensor([k for k, n in enumerate(new) for _ in range(n)])
    cached_row = torch.tensor([k for k, p in enumerate(past) for _ in range(p)], dtype=torch.long)
    order = torch.arange(len(token_row))
    mine = token_row[:, None] == token_row[None, :]
    allowed = torch.cat([token_row[:, None] == cached_row[None, :], mine & (order[None, :] <= order[:, None])], dim=1)
    mask = torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)
    return mask[None, None]


def _runs(first: torch.Tensor, width: int) -> torch.Tensor:
    """A zeroed ``[1, heads, width, dim]`` buffer shaped like the first forward's keys or values."""
    return first.new_zeros((first.shape[0], first.shape[1], width, first.shape[3]))
