"""The generator's key/value cache in the guarded loop, grown in place instead of copied every step.

``transformers``' ``DynamicLayer`` appends a step's keys and values with ``torch.cat``: every step copies
the whole cache, per layer, twice. For the offline kit's small GPT-2 that copy was a quarter of each
generator step in the guarded loop (``jobs/results/retired/bench_guard.md``, made by older code).
``GrowingLayer`` keeps each layer's
keys and values in a buffer with room to the right (doubled when full, so a token costs a copy of its own
columns only) and hands the model a view of the columns in use. The model reads the same values in the
same shape, so its scores are bit-identical (tests/guard/test_guard.py compares the tokens with
``model.generate``'s, which uses ``DynamicLayer``).

The loop's own edits keep working: cutting columns off the left (``trim``) leaves a view into the same
buffer, writes into the view (a refilled slot's prompt) land in it, and anything else that replaces a
layer's tensors (padding on the left) makes the next step start a new buffer from them.
"""

from __future__ import annotations

import functools

import torch


def growing_cache(model):
    """The cache ``generate`` makes for ``model`` (``DynamicCache`` from its config), with each plain
    ``DynamicLayer`` grown in place; other layer kinds (sliding windows) are kept as they are."""
    from transformers.cache_utils import DynamicCache, DynamicLayer

    cache = DynamicCache(config=model.config.get_text_config(decoder=True))
    growing = growing_layer_class()
    cache.layers = [growing() if type(layer) is DynamicLayer else layer for layer in cache.layers]
    if getattr(cache, "layer_class_to_replicate", None) is DynamicLayer:
        cache.layer_class_to_replicate = growing
    return cache


@functools.cache
def growing_layer_class():
    """``GrowingLayer``, defined on first use: ``transformers`` loads with the model, not with this module."""
    from transformers.cache_utils import DynamicLayer

    class GrowingLayer(DynamicLayer):
        """A ``DynamicLayer`` whose ``keys``/``values`` are views of buffers with room for more columns."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.key_room: torch.Tensor | None = None
            self.value_room: torch.Tensor | None = None

        def update(self, key_states, value_states, *args, **kwargs):
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            self.keys, self.key_room = append_columns(self.keys, self.key_room, key_states)
            self.values, self.value_room = append_columns(self.values, self.value_room, value_states)
            return self.keys, self.values

    return GrowingLayer


def append_columns(
    held: torch.Tensor, room: torch.Tensor | None, new: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.cat([held, new], dim=2)`` as a view of ``room`` (``[batch, heads, capacity, dim]``), written in
    place when ``held`` is a run of ``room``'s columns with space after it, else in a new buffer of twice
    the columns. Returns the view and the buffer."""
    width, count = (held.shape[2] if held.dim() == 4 else 0), new.shape[2]
    start = _run_start(held, room) if width else None
    if start is not None and start + width + count <= room.shape[2]:
        room[:, :, start + width : start + width + count] = new
        return room[:, :, start : start + width + count], room
    room = new.new_empty((*new.shape[:2], 2 * (width + count), new.shape[3]))
    if width:
        room[:, :, :width] = held
    room[:, :, width : width + count] = new
    return room[:, :, : width + count], room


def _run_start(held: torch.Tensor, room: torch.Tensor | None) -> int | None:
    """The column of ``room`` where ``held`` begins, if ``held`` is ``room[:, :, start:start + width]``."""
    if room is None or held.untyped_storage().data_ptr() != room.untyped_storage().data_ptr():
        return None
    if held.stride() != room.stride() or held.shape[:2] != room.shape[:2] or held.shape[3] != room.shape[3]:
        return None
    start, rest = divmod(held.storage_offset() - room.storage_offset(), room.stride(2))
    return start if rest == 0 and 0 <= start * room.stride(2) < room.stride(1) else None
