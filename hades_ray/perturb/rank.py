"""RANK: perplexity of every candidate under a causal LM; the most fluent candidate is kept."""

from __future__ import annotations

import math

import torch


def encode_for_perplexity(tokenizer, texts: list[str], max_length: int) -> list[list[int]]:
    """Token ids per text, starting with BOS where the model has one so the first word is scored too."""
    encoded = tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]
    bos = tokenizer.bos_token_id
    if bos is None:
        return [list(ids) for ids in encoded]
    return [list(ids) if ids and ids[0] == bos else [bos, *ids][:max_length] for ids in encoded]


MAX_BATCH_TOKENS = 32_768  # rows x width of one forward; hades_ray/plan counts the same chunks


def length_chunks(lengths: list[int], max_batch_tokens: int = MAX_BATCH_TOKENS) -> list[list[int]]:
    """The indices of each forward ``perplexities`` makes: shortest first, as many rows as the
    shortest of them allows within ``max_batch_tokens``. A pure function of the lengths, so the planner
    counts the very same forwards."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    chunks, begin = [], 0
    while begin < len(order):
        take = max(1, max_batch_tokens // max(lengths[order[begin]], 1))
        chunks.append(order[begin : begin + take])
        begin += len(chunks[-1])
    return chunks


def forward_shapes(lengths: list[int], max_batch_tokens: int = MAX_BATCH_TOKENS) -> list[tuple[int, int]]:
    """(rows, width) of each forward ``perplexities`` makes for sequences of these lengths."""
    return [(len(chunk), max(lengths[i] for i in chunk)) for chunk in length_chunks(lengths, max_batch_tokens)]


@torch.inference_mode()
def perplexities(
    model, token_ids: list[list[int]], pad_id: int, max_batch_tokens: int = MAX_BATCH_TOKENS
) -> list[float]:
    """exp(mean next-token NLL) of each sequence; sequences are batched by length, results keep order."""
    device = next(model.parameters()).device
    result = [math.nan] * len(token_ids)
    for chunk in length_chunks([len(ids) for ids in token_ids], max_batch_tokens):
        width = max(len(token_ids[i]) for i in chunk)
        ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
        attention = torch.zeros((len(chunk), width), dtype=torch.long)
        for row, index in enumerate(chunk):
            ids[row, : len(token_ids[index])] = torch.tensor(token_ids[index])
            attention[row, : len(token_ids[index])] = 1
        logits = model(input_ids=ids.to(device), attention_mask=attention.to(device)).logits.float()
        nll = torch.nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:].to(device), reduction="none")
        valid = attention[:, 1:].to(device).float()
        mean_nll = (nll * valid).sum(dim=1) / valid.sum(dim=1).clamp(min=1)
        for row, index in enumerate(chunk):
            result[index] = float(torch.exp(mean_nll[row]))
    return result


def most_fluent(ppls: list[float]) -> int:
    """Index of the lowest perplexity; ties go to the earliest candidate."""
    return min(range(len(ppls)), key=lambda i: (ppls[i], i))
