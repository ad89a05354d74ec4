"""The guarded loop's generator cache (hades_ray/guard/growing_cache.py): the same keys and values as
``transformers``' concatenating cache, without copying the held columns at every step."""

from __future__ import annotations

import torch

from hades_ray.guard.growing_cache import append_columns, growing_cache


def _columns(n: int, seed: int) -> torch.Tensor:
    return torch.randn((3, 2, n, 4), generator=torch.Generator().manual_seed(seed))


def test_appending_matches_concatenation_and_reuses_one_buffer():
    held, room = append_columns(torch.tensor([]), None, _columns(5, 0))
    expected, buffers = _columns(5, 0), set()
    for step in range(1, 12):
        new = _columns(1, step)
        held, room = append_columns(held, room, new)
        expected = torch.cat([expected, new], dim=2)
        assert torch.equal(held, expected)
        buffers.add(room.untyped_storage().data_ptr())
    # 5 columns start a 10-column buffer; the 11th column starts one of 22, which holds all 16
    assert len(buffers) == 2 and room.shape[2] == 22


def test_cutting_the_left_keeps_the_buffer_and_a_replaced_tensor_starts_a_new_one():
    held, room = append_columns(torch.tensor([]), None, _columns(6, 0))
    expected = _columns(6, 0)
    held, expected = held[:, :, 2:], expected[:, :, 2:]  # the loop's trim: a view of the same buffer
    held, room_after = append_columns(held, room, _columns(1, 1))
    assert room_after is room and torch.equal(held, torch.cat([expected, _columns(1, 1)], dim=2))
    # the loop's left padding replaces the tensor: the next step copies it into a new buffer
    padded = torch.cat([torch.zeros((3, 2, 1, 4)), held], dim=2)
    grown, room_new = append_columns(padded, room, _columns(1, 2))
    assert room_new is not room and torch.equal(grown, torch.cat([padded, _columns(1, 2)], dim=2))
    # a write into the view (a refilled slot's prompt) lands in the buffer the next step extends
    grown[1, :, -2:] = 7.0
    again, _ = append_columns(grown, room_new, _columns(1, 3))
    assert torch.equal(again[1, :, -3:-1], torch.full((2, 2, 4), 7.0))


def test_a_model_run_with_it_scores_as_with_the_default_cache(generator):
    tokenizer, model = generator
    enc = tokenizer(["The river runs through the old town", "A"], return_tensors="pt", padding=True)
    caches = [growing_cache(model), None]
    outs = [model(**enc, cache=c, use_cache=True) if c is not None else model(**enc, use_cache=True) for c in caches]
    mask = enc["attention_mask"]
    for step in range(6):
        feed = torch.tensor([[5 + step], [9 + step]])
        mask = torch.cat([mask, torch.ones((2, 1), dtype=mask.dtype)], dim=1)
        outs = [model(input_ids=feed, attention_mask=mask, cache=out.cache, use_cache=True) for out in outs]
        assert torch.equal(outs[0].logits, outs[1].logits)  # bit for bit
    assert type(outs[0].cache.layers[0]).__name__ == "GrowingLayer"
