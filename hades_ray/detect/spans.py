"""Word spans to subword positions, with the context each mode allows.

Words are joined by single spaces, so a word's character range is plain arithmetic and the
tokenizer's ``offset_mapping`` tells which subwords belong to the span. The window is cut at word
boundaries and the kept words are tokenized again, which works for any tokenizer (WordPiece, BPE,
SentencePiece) without rebuilding special tokens by hand.

Online mode keeps only the span and the words before it: nothing after the span reaches the model,
so its score cannot depend on it (tests/detect/test_spans.py checks this bit for bit).

A window is counted in subword tokens (``detect.window_unit: tokens``, the default: the span and its
context within ``window`` tokens, specials included) or in words (``words``: ``window`` context words
besides the span, our reading: the paper's Fig. 6 gives no unit; offline half before and half after it,
a side short of words leaving its share to the other; online all before it).
"""

from __future__ import annotations

import numpy as np
import torch

from hades_ray.detect.settings import TOKENS, WORDS


def special_token_count(tokenizer) -> int:
    """How many special tokens (CLS, SEP, BOS...) the tokenizer adds to one sequence."""
    try:
        return int(tokenizer.num_special_tokens_to_add(pair=False))
    except AttributeError:
        return len(tokenizer("a")["input_ids"]) - len(tokenizer("a", add_special_tokens=False)["input_ids"])


def token_words(tokenizer, words: list[str]) -> np.ndarray:
    """Word index of each subword of ``" ".join(words)`` (no special tokens)."""
    return token_words_of(tokenizer, [words])[0]


def token_words_of(tokenizer, texts: list[list[str]]) -> list[np.ndarray]:
    """``token_words`` of many word lists, tokenized in one call (a call's fixed cost counts per step
    in the guard, hades_ray/detect/incremental.py)."""
    if not texts:
        return []
    joined = [" ".join(words) for words in texts]
    encoded = tokenizer(joined, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    out = []
    for words, offsets in zip(texts, encoded):
        starts = np.cumsum([0] + [len(w) + 1 for w in words[:-1]])
        ends = np.array([max(b, a + 1) for a, b in offsets]) if offsets else np.zeros(0, dtype=int)
        out.append(np.searchsorted(starts, ends - 1, side="right") - 1)
    return out


def word_range(tok_words: np.ndarray, lo: int, hi: int, n_words: int) -> tuple[int, int]:
    """Whole words covered by subwords ``lo..hi-1``: a word cut by the window is dropped."""
    lo_w = int(tok_words[lo]) + (1 if lo > 0 and tok_words[lo - 1] == tok_words[lo] else 0)
    last = hi - 1
    hi_w = int(tok_words[last]) + (1 if hi >= len(tok_words) or tok_words[hi] != tok_words[last] else 0)
    return lo_w, min(hi_w, n_words)


def window_unit(settings: dict) -> str:
    """A saved detector's window unit; detectors saved before the key count tokens."""
    return settings.get("window_unit", TOKENS)


def word_range_of(n_words: int, start: int, end: int, mode: str, window: int) -> tuple[int, int]:
    """Words ``[lo, hi)`` of a ``window``-word context around span ``start..end`` (the span whole)."""
    if mode == "online":
        return max(0, start - window), min(n_words, end + 1)
    lo = max(0, start - window // 2)
    hi = min(n_words, end + 1 + window - (start - lo))  # what the left side cannot use goes right
    lo = max(0, start - (window - (hi - end - 1)))  # and what the right side cannot use goes left
    return lo, hi


def token_range_of(tokenizer, words: list[str], start: int, end: int, mode: str, window: int) -> tuple[int, int]:
    """Whole words ``[lo, hi)`` whose subwords, specials included, fit ``window`` tokens around the span."""
    budget = max(1, window - special_token_count(tokenizer))
    tok_words = token_words(tokenizer, words)
    n = len(tok_words)
    lo_w, hi_w = 0, len(words)
    if n > budget:
        in_span = np.nonzero((tok_words >= start) & (tok_words <= end))[0]
        s, e = (int(in_span[0]), int(in_span[-1]) + 1) if in_span.size else (0, n)
        if mode == "online":
            lo_tok = max(0, e - budget)
        else:
            lo_tok = max(0, s - max(0, budget - (e - s)) // 2)
        hi_tok = min(n, lo_tok + budget)
        lo_tok = max(0, hi_tok - budget)
        lo_w, hi_w = word_range(tok_words, lo_tok, hi_tok, len(words))
        lo_w, hi_w = min(lo_w, start), max(hi_w, end + 1)  # a span longer than the window stays whole
    return lo_w, hi_w


def context_window(
    tokenizer, words: list[str], start: int, end: int, mode: str, window: int, unit: str = TOKENS
) -> dict:
    """The text the model sees for span ``start..end`` and the span's character range in it."""
    if mode == "online":
        words = words[: end + 1]
    if unit == WORDS:
        lo_w, hi_w = word_range_of(len(words), start, end, mode, window)
    else:
        lo_w, hi_w = token_range_of(tokenizer, words, start, end, mode, window)
    prefix = " ".join(words[lo_w:start])
    char_start = len(prefix) + (1 if prefix else 0)
    char_end = char_start + len(" ".join(words[start : end + 1]))
    return {"text": " ".join(words[lo_w:hi_w]), "char_start": char_start, "char_end": char_end}


def encode_spans(tokenizer, items: list[dict], mode: str, window: int, unit: str = TOKENS) -> dict[str, torch.Tensor]:
    """Batch of ``{"words", "start", "end"}`` -> padded ``input_ids``, ``attention_mask``, ``span_mask``."""
    views = [context_window(tokenizer, it["words"], it["start"], it["end"], mode, window, unit) for it in items]
    enc = tokenizer([v["text"] for v in views], padding=True, return_offsets_mapping=True, return_tensors="pt")
    offsets = enc.pop("offset_mapping")
    cs = torch.tensor([v["char_start"] for v in views]).unsqueeze(1)
    ce = torch.tensor([v["char_end"] for v in views]).unsqueeze(1)
    real = (offsets[..., 1] > offsets[..., 0]) & enc["attention_mask"].bool()
    span = real & (offsets[..., 0] < ce) & (offsets[..., 1] > cs)
    # A span no subword covers (exotic characters) falls back to its row's last real token.
    empty = ~span.any(dim=1)
    if empty.any():
        last = enc["attention_mask"].sum(dim=1) - 1
        span[empty, last[empty]] = True
    return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"], "span_mask": span}
