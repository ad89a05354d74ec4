"""Held-out quality of the kit's models: MLM top-k recovery of content words, GPT-2 pairwise preference.

The metric functions take plain arrays so tests can check them on hand-made cases; the case
builders take a spaCy pipeline and the held-out leads; the model passes batch and pad per batch.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np


def content_word_spans(doc, stop_words: frozenset[str] | None = None) -> list[tuple[int, int]]:
    """Character spans of content words: alphabetic, not a stop word (NLTK's list unless given, as
    MASK uses it), at least two letters."""
    if stop_words is None:
        from hades_ray.text.stopwords import english_stop_words

        stop_words = english_stop_words("nltk")
    return [(t.idx, t.idx + len(t.text)) for t in doc if t.is_alpha and t.lower_ not in stop_words and len(t.text) > 1]


def mlm_cases(
    texts: list[str], docs, tokenizer, rng: np.random.Generator, per_text: int = 1, max_length: int = 128
) -> list[tuple[list[int], int, int]]:
    """(input ids with one masked word, its position, the original token id) for single-token words."""
    cases = []
    for text, doc in zip(texts, docs, strict=True):
        encoded = tokenizer(text, truncation=True, max_length=max_length, return_offsets_mapping=True)
        position_of = {tuple(span): i for i, span in enumerate(encoded["offset_mapping"]) if span[1] > span[0]}
        candidates = [position_of[s] for s in content_word_spans(doc) if s in position_of]
        for position in rng.permutation(candidates)[:per_text].tolist():
            ids = list(encoded["input_ids"])
            target, ids[position] = ids[position], tokenizer.mask_token_id
            cases.append((ids, position, target))
    return cases


def topk_hits(logits: np.ndarray, targets: np.ndarray, k: int = 10) -> np.ndarray:
    """Whether each row's target id is among that row's ``k`` highest logits."""
    top = np.argpartition(-logits, kth=min(k, logits.shape[1] - 1), axis=1)[:, :k]
    return (top == targets[:, None]).any(axis=1)


def _padded(rows: list[list[int]], pad_id: int):
    """(ids, attention mask) of ``rows``, padded on the right to the longest."""
    import torch

    ids = torch.full((len(rows), max(len(row) for row in rows)), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for r, row in enumerate(rows):
        ids[r, : len(row)], mask[r, : len(row)] = torch.tensor(row), 1
    return ids, mask


def mlm_topk_hit_rate(model, tokenizer, cases, k: int = 10, batch_size: int = 32) -> dict:
    """Share of cases whose original word is in the model's top ``k`` at the mask, with ``n``."""
    import torch

    hits = []
    for start in range(0, len(cases), batch_size):
        rows = cases[start : start + batch_size]
        ids, mask = _padded([row_ids for row_ids, _, _ in rows], tokenizer.pad_token_id)
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=mask).logits
        at_mask = logits[torch.arange(len(rows)), torch.tensor([p for _, p, _ in rows])].float().numpy()
        hits.append(topk_hits(at_mask, np.array([t for _, _, t in rows]), k))
    hits = np.concatenate(hits) if hits else np.zeros(0, dtype=bool)
    return {f"top{k}": round(float(hits.mean()), 4) if len(hits) else None, "n": len(hits)}


def replacement_vocabulary(texts: list[str], stop_words, min_count: int = 3) -> list[str]:
    """Lower-case alphabetic non-stop words seen at least ``min_count`` times, sorted."""
    counts = Counter(w for text in texts for w in re.findall(r"[a-z]{3,}", text.lower()))
    return sorted(w for w, c in counts.items() if c >= min_count and w not in stop_words)


def _match_case(word: str, like: str) -> str:
    if like.isupper() and len(like) > 1:
        return word.upper()
    return word.capitalize() if like[:1].isupper() else word


def swap_words(
    text: str, spans: list[tuple[int, int]], vocabulary: list[str], rng: np.random.Generator, n_swaps: int = 3
) -> str | None:
    """``text`` with ``n_swaps`` content words replaced by random vocabulary words (case kept), or None."""
    if len(spans) < n_swaps:
        return None
    chosen = sorted(rng.choice(len(spans), size=n_swaps, replace=False).tolist(), reverse=True)
    for index in chosen:
        start, end = spans[index]
        original = text[start:end]
        word = vocabulary[int(rng.integers(len(vocabulary)))]
        text = text[:start] + _match_case(word, original) + text[end:]
    return text


def swap_pairs(
    texts: list[str], docs, vocabulary: list[str], rng: np.random.Generator, n_pairs: int = 200, n_swaps: int = 3
) -> list[tuple[str, str]]:
    """Up to ``n_pairs`` (original, swapped) pairs from the texts, in order."""
    pairs = []
    for text, doc in zip(texts, docs, strict=True):
        swapped = swap_words(text, content_word_spans(doc), vocabulary, rng, n_swaps)
        if swapped is not None and swapped != text:
            pairs.append((text, swapped))
        if len(pairs) == n_pairs:
            break
    return pairs


def perplexities(model, tokenizer, texts: list[str], max_length: int | None = None, batch_size: int = 16) -> np.ndarray:
    """Per-text perplexity under a causal LM, each text scored after a leading end-of-text token.

    Texts longer than the model's context (``max_length``, default ``n_positions``) are truncated.
    """
    import torch

    from hades_ray.models.nll import next_token_nll

    max_length = max_length or getattr(model.config, "n_positions", 512)
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    # Cut to the context below, after the leading token (verbose=False: not the over-length warning).
    rows = [([bos] + ids)[:max_length] for ids in tokenizer(texts, verbose=False)["input_ids"]]
    out = []
    for start in range(0, len(rows), batch_size):
        ids, mask = _padded(rows[start : start + batch_size], 0)
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
        nll = next_token_nll(logits, ids[:, 1:])
        scored = mask[:, 1:].float()
        out.append(torch.exp((nll * scored).sum(1) / scored.sum(1).clamp(min=1)).numpy())
    return np.concatenate(out) if out else np.zeros(0)


def pairwise_accuracy(original_ppl: np.ndarray, swapped_ppl: np.ndarray) -> float:
    """Share of pairs where the original text has the strictly lower perplexity."""
    original_ppl, swapped_ppl = np.asarray(original_ppl), np.asarray(swapped_ppl)
    return float((original_ppl < swapped_ppl).mean()) if len(original_ppl) else float("nan")
