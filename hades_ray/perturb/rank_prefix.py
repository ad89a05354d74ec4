"""RANK with each document's shared prefix computed once (``perturb.rank.share_prefix``).

A document's candidates agree on their first tokens (MASK never touches the leading sentences). Of
their longest common token prefix, all but the last token (S tokens) run once per document: that
forward gives their keys and values and the NLL of tokens 1..S. Each candidate's remainder (its
tokens from S on) then runs on those keys and values and gives the NLL of tokens S+1..L-1, so a
perplexity still covers the whole text: exp((prefix NLL + remainder NLL) / (L - 1)). The last
shared token starts every remainder because its position predicts the first token that differs.

Packing follows perturb/packing.py. Prefixes are packed like ``perplexities`` packs sequences
(by width). Remainders share a forward only where their (prefix width, remainder width) agree, and a
forward holds at most ``max_batch_tokens`` keys (prefix plus remainder width per row), the memory the
unshared forward of a whole candidate takes. Exact packing pads nothing, so a row's arithmetic depends
on its own document alone; binned packing pads prefix and remainder to their bins and fills every
forward to the width's fixed rows, so the shapes never depend on the neighbours either. Sharing
changes the last bits of a perplexity (another order of the same sums): within 1e-5 relative on the
micro models and the offline kit in float32 (tests/perturb/test_rank_prefix.py).
"""

from __future__ import annotations

import inspect
import math

import torch

from hades_ray.models.fixed_rows import MIN_FORWARD_TOKENS
from hades_ray.perturb.packing import Packing, body_rows, model_positions, packing_of
from hades_ray.perturb.rank import head_nll, length_chunks, perplexities
from hades_ray.perturb.settings import RankConfig


def shared_prefix_length(candidates: list[list[int]]) -> int:
    """S: the leading tokens whose keys and values a document's candidates share (one less than their
    longest common prefix); 0 for a single candidate, where there is nothing to share."""
    if len(candidates) < 2:
        return 0
    common = 0
    for column in zip(*candidates):
        if any(token != column[0] for token in column[1:]):
            break
        common += 1
    return max(common - 1, 0)


def remainder_chunks(pieces: list[tuple[int, int]], packing: Packing | None = None) -> list[list[int]]:
    """The indices of each remainder forward, for remainders given as (prefix S, remainder R) tokens:
    by (prefix width, remainder width), then in input order, as many rows as fit the token budget
    with the prefix's keys counted. A pure function of the lengths, as ``length_chunks``."""
    packing = packing or Packing()

    def widths(index: int) -> tuple[int, int]:
        prefix, remainder = pieces[index]
        return (packing.width(prefix) if prefix else 0, packing.width(remainder))

    order = sorted(range(len(pieces)), key=lambda i: (widths(i), i))
    chunks, begin = [], 0
    while begin < len(order):
        key = widths(order[begin])
        same = [i for i in order[begin : begin + packing.rows(sum(key))] if widths(i) == key]
        chunks.append(same)
        begin += len(same)
    return chunks


def scored_pieces(documents: list[list[list[int]]]) -> tuple[list[int], list[tuple[int, int]], list[tuple[int, int]]]:
    """Each document's S, and the (document, candidate) and (S, R) of every remainder that predicts a
    token (R >= 2; a remainder of one token only starts, the prefix already scored it)."""
    prefixes = [shared_prefix_length(candidates) for candidates in documents]
    where, pieces = [], []
    for doc, candidates in enumerate(documents):
        for candidate, ids in enumerate(candidates):
            if len(ids) - prefixes[doc] >= 2:
                where.append((doc, candidate))
                pieces.append((prefixes[doc], len(ids) - prefixes[doc]))
    return prefixes, where, pieces


def shared_forward_shapes(documents: list[tuple[int, list[int]]], packing: Packing | None = None) -> dict:
    """(rows, width) of each prefix forward and each remainder forward ``shared_perplexities`` makes
    for documents given as (S, candidate lengths); widths count the tokens run, not the keys reused."""
    packing = packing or Packing()
    prefixes = [prefix for prefix, _ in documents if prefix]
    pieces = [(p, n - p) for p, lengths in documents for n in lengths if n - p >= 2]
    shapes = {"prefix": [], "remainder": []}
    for chunk in length_chunks(prefixes, packing):
        width = packing.width(max(prefixes[i] for i in chunk))
        shapes["prefix"].append((body_rows(len(chunk), packing, width), width))
    for chunk in remainder_chunks(pieces, packing):
        prefix = pieces[chunk[0]][0]
        past_width = packing.width(prefix) if prefix else 0
        width = packing.width(max(pieces[i][1] for i in chunk))
        rows = remainder_rows(len(chunk), packing, past_width, width)
        shapes["remainder"].append((max(rows, -(-MIN_FORWARD_TOKENS // width)), width))
    return shapes


def remainder_rows(count: int, packing: Packing, past_width: int, width: int) -> int:
    """Rows of a remainder forward of ``count`` real rows before filler rows: with fixed rows, all the
    budget allows for its keys (the prefix's and its own)."""
    return packing.rows(past_width + width) if packing.fixed_rows else count


def document_perplexities(
    model, documents: list[list[list[int]]], pad_id: int, config: RankConfig | None = None
) -> list[list[float]]:
    """The perplexity of every candidate of every document (each document a list of candidates' token
    ids), with each document's shared prefix run once where ``config.share_prefix`` says so and the
    model has a separate output projection; otherwise every candidate whole, as ``perplexities``."""
    config = config or RankConfig()
    if not config.share_prefix or model.get_output_embeddings() is None:
        flat = perplexities(model, [ids for candidates in documents for ids in candidates], pad_id, config)
        result, begin = [], 0
        for candidates in documents:
            result.append(flat[begin : begin + len(candidates)])
            begin += len(candidates)
        return result
    return shared_perplexities(model, documents, pad_id, config)


@torch.inference_mode()
def shared_perplexities(model, documents: list[list[list[int]]], pad_id: int, config: RankConfig) -> list[list[float]]:
    """``document_perplexities`` with shared prefixes (see the module docstring)."""
    device = next(model.parameters()).device
    packing = packing_of(config, device.type, model_positions(model))
    prefixes, where, pieces = scored_pieces(documents)
    prefix_nll, caches = _run_prefixes(model, documents, prefixes, pad_id, packing, config.logits_mb)
    remainder_nll = [[0.0] * len(candidates) for candidates in documents]
    for chunk in remainder_chunks(pieces, packing):
        rows = [where[i] for i in chunk]
        nll = _run_remainders(model, documents, prefixes, rows, caches, pad_id, packing, config.logits_mb)
        for (doc, candidate), value in zip(rows, nll):
            remainder_nll[doc][candidate] = value
    return [
        [math.exp((prefix_nll[doc] + remainder_nll[doc][c]) / max(len(ids) - 1, 1)) for c, ids in enumerate(candidates)]
        for doc, candidates in enumerate(documents)
    ]


def _run_prefixes(model, documents, prefixes, pad_id, packing, logits_mb) -> tuple[list[float], dict]:
    """Each document's prefix NLL (tokens 1..S) and its keys and values per layer ([1, heads, width,
    dim], padded to the prefix's width under binned packing)."""
    head = model.get_output_embeddings()
    nll_sums, caches = [0.0] * len(documents), {}
    shared = [doc for doc, prefix in enumerate(prefixes) if prefix]
    for chunk in length_chunks([prefixes[doc] for doc in shared], packing):
        docs = [shared[i] for i in chunk]
        width = packing.width(max(prefixes[doc] for doc in docs))
        count = packing.rows(width) if packing.fixed_rows else len(docs)
        ids = torch.full((count, width + 1), pad_id, dtype=torch.long)  # one more: the last position's target
        attention = torch.zeros((count, width), dtype=torch.long)
        attention[:, 0] = 1  # dummy rows see one token (a row with none is NaN in some attention kernels)
        for row, doc in enumerate(docs):
            prefix = prefixes[doc]
            ids[row, : prefix + 1] = torch.tensor(documents[doc][0][: prefix + 1])
            attention[row, :prefix] = 1
        hidden, layers = _forward(model, ids[:, :width], attention, None, None, device=_device(model))
        nll = head_nll(head, hidden, ids[:, 1:].to(hidden.device), logits_mb)
        valid = attention.to(nll.device).float()
        sums = (nll * valid).sum(dim=1)
        for row, doc in enumerate(docs):
            nll_sums[doc] = float(sums[row])
            caches[doc] = [(k[row : row + 1].clone(), v[row : row + 1].clone()) for k, v in layers]
    return nll_sums, caches


def _run_remainders(model, documents, prefixes, rows, caches, pad_id, packing, logits_mb) -> list[float]:
    """The remainder NLL (tokens S+1..L-1) of each (document, candidate) of one forward."""
    lengths = [len(documents[doc][c]) - prefixes[doc] for doc, c in rows]
    prefix = prefixes[rows[0][0]]
    past_width = packing.width(prefix) if prefix else 0
    width = packing.width(max(lengths))
    count = remainder_rows(len(rows), packing, past_width, width)
    ids = torch.full((count, width), pad_id, dtype=torch.long)
    attention = torch.zeros((count, past_width + width), dtype=torch.long)
    attention[:, 0] = 1  # dummy rows see one key
    positions = torch.zeros((count, width), dtype=torch.long)
    for row, (doc, c) in enumerate(rows):
        start = prefixes[doc]
        ids[row, : lengths[row]] = torch.tensor(documents[doc][c][start:])
        attention[row, :start] = 1
        attention[row, past_width : past_width + lengths[row]] = 1
        positions[row] = torch.arange(start, start + width)
    limit = model_positions(model)
    if limit:  # a binned remainder's padding may run past the model's positions; it is masked anyway
        positions.clamp_(max=limit - 1)
    past = _stacked_past([caches[doc] for doc, _ in rows], count) if past_width else None
    hidden, _ = _forward(model, ids, attention, positions, past, device=_device(model))
    nll = head_nll(model.get_output_embeddings(), hidden[:, :-1], ids[:, 1:].to(hidden.device), logits_mb)
    valid = attention[:, past_width + 1 :].to(nll.device).float()
    sums = (nll * valid).sum(dim=1)
    return [float(sums[row]) for row in range(len(rows))]


def _device(model) -> torch.device:
    return next(model.parameters()).device


def _stacked_past(per_row: list[list[tuple[torch.Tensor, torch.Tensor]]], count: int) -> list:
    """Per layer, the rows' keys and values stacked, dummy rows (up to ``count``) zeros."""
    layers = []
    for layer in zip(*per_row):
        keys = torch.cat([k for k, _ in layer])
        values = torch.cat([v for _, v in layer])
        if count > len(per_row):
            keys = torch.cat([keys, keys.new_zeros((count - len(per_row), *keys.shape[1:]))])
            values = torch.cat([values, values.new_zeros((count - len(per_row), *values.shape[1:]))])
        layers.append((keys, values))
    return layers


def _forward(model, ids, attention, positions, past, device) -> tuple[torch.Tensor, list]:
    """The base model's hidden states [rows, width, hidden] and its keys and values per layer (real rows
    only), on at least MIN_FORWARD_TOKENS token rows (copies of the first row fill smaller forwards)."""
    real = ids.shape[0]
    extra = max(0, -(-MIN_FORWARD_TOKENS // ids.shape[1]) - real)

    def filled(tensor: torch.Tensor) -> torch.Tensor:
        tensor = tensor.to(device)
        return torch.cat([tensor, tensor[:1].expand(extra, *tensor.shape[1:])]) if extra else tensor

    inputs = {"input_ids": filled(ids), "attention_mask": filled(attention), "use_cache": True}
    if positions is not None:
        inputs["position_ids"] = filled(positions)
    base = model.base_model
    if past is not None:
        inputs[_cache_argument(base)] = _cache_of([(filled(k), filled(v)) for k, v in past])
    output = base(**inputs)
    return output[0][:real], [(k[:real], v[:real]) for k, v in _layers_of(output)]


def _cache_argument(base) -> str:
    # transformers 5 names it ``cache``; 4.x ``past_key_values`` (the project supports both).
    return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"


def _cache_of(layers: list[tuple[torch.Tensor, torch.Tensor]]):
    from transformers import DynamicCache

    cache = DynamicCache()
    for index, (keys, values) in enumerate(layers):
        cache.update(keys, values, index)
    return cache


def _layers_of(output) -> list[tuple[torch.Tensor, torch.Tensor]]:
    cache = output.get("cache", None) or output.get("past_key_values", None)
    if hasattr(cache, "layers"):  # transformers 5
        return [(layer.keys, layer.values) for layer in cache.layers]
    if hasattr(cache, "key_cache"):  # transformers 4.x DynamicCache
        return list(zip(cache.key_cache, cache.value_cache))
    return [tuple(layer) for layer in cache]  # a legacy tuple of (keys, values)


def tokens_run(documents: list[list[list[int]]], share: bool) -> int:
    """Token positions the model runs for these documents' candidates (exact packing pads none): every
    candidate whole, or with ``share`` each document's shared prefix once and the remainders longer than
    one token (a one-token remainder is scored from the prefix's last logits)."""
    if not share:
        return sum(len(ids) for candidates in documents for ids in candidates)
    total = 0
    for candidates in documents:
        prefix = shared_prefix_length(candidates)
        total += prefix + sum(len(ids) - prefix for ids in candidates if len(ids) - prefix > 1)
    return total
