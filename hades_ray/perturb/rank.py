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


@torch.inference_mode()
def perplexities(model, token_ids: list[list[int]], pad_id: int, max_batch_tokens: int = 32_768) -> list[float]:
    """exp(mean next-token NLL) of each sequence; sequences are batched by length, results keep order."""
    device = next(model.parameters()).device
    order = sorted(range(len(token_ids)), key=lambda i: len(token_ids[i]))
    result = [math.nan] * len(token_ids)
    begin = 0
    while begin < len(order):
        width = len(token_ids[order[min(len(order) - 1, begin)]])
        take = max(1, max_batch_tokens // max(width, 1))
        chunk = order[begin : begin + take]
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
        begin += len(chunk)
    return result


def most_fluent(ppls: list[float]) -> int:
    """Index of the lowest perplexity; ties go to the earliest candidate."""
    return min(range(len(ppls)), key=lambda i: (ppls[i], i))
