"""Online scoring with a causal backbone: one forward scores every word of a window.

A causal model's hidden state at a token sees only the tokens before it, so the states of a forward
over a whole text are, at each word, the states a per-word online forward (the text up to the word,
as ``hades_ray/detect/spans.py`` builds it) would compute: one forward replaces one per word. The
words are joined by single spaces, and a byte-level BPE cuts a text at a word's end exactly as it cuts
the longer text there, so the tokens agree too.

A text longer than the detector's window is cut into windows of ``window`` tokens starting every
``stride`` tokens, each starting at a word boundary, and each target is scored in the first window
that holds it whole: the one giving it the most left context, between ``window - stride`` and
``window`` tokens (the per-word view gives exactly ``window``). A target longer than the stride
falls back to its own per-word view.
"""

from __future__ import annotations

import numpy as np

from hades_ray.detect.spans import special_token_count, token_words, word_range


def is_causal_config(config) -> bool:
    """Whether a backbone's ``config`` describes a decoder."""
    return (
        bool(getattr(config, "is_decoder", False))
        or any(a.endswith("ForCausalLM") or a.endswith("LMHeadModel") for a in (config.architectures or []))
        or config.model_type in {"gpt2", "gpt_neo", "gptj", "gpt_neox", "llama", "mistral", "qwen2", "opt", "bloom"}
    )


def text_windows(tokenizer, words: list[str], window: int, stride: int, tok_words=None) -> list[tuple[int, int]]:
    """Word ranges ``[lo, hi)`` of the windows a text is scored in (one when it fits); ``tok_words``: the
    text's ``token_words`` when the caller has them already."""
    budget = max(1, window - special_token_count(tokenizer))
    if not words:
        return []
    tok_words = token_words(tokenizer, words) if tok_words is None else tok_words
    n = len(tok_words)
    if n <= budget:
        return [(0, len(words))]
    ranges, lo = [], 0
    while True:
        hi = min(n, lo + budget)
        ranges.append(word_range(tok_words, lo, hi, len(words)))
        if hi >= n:
            return ranges
        lo += stride
        while lo < n and lo > 0 and tok_words[lo - 1] == tok_words[lo]:
            lo += 1  # start at a word boundary


def window_job(tokenizer, words: list[str], lo: int, hi: int, first: list[int], last: list[int]) -> dict:
    """A ``score_views`` job: the window's tokens and one mask per target (its words' tokens)."""
    ids, owner = encode_window(tokenizer, words, lo, hi)
    masks = []
    for f, la in zip(first, last):
        mask = (owner >= f) & (owner <= la)
        if not mask.any():  # no token of its own (cannot happen for a word with letters): the last token
            mask[len(ids) - 1] = True
        masks.append(mask)
    return {"ids": ids, "masks": masks}


def assign_targets(ranges: list[tuple[int, int]], first: list[int], last: list[int]) -> list[int]:
    """For each target, the first window holding it whole; -1 for none (a target longer than a stride)."""
    owners = []
    for f, la in zip(first, last):
        owners.append(next((k for k, (lo, hi) in enumerate(ranges) if lo <= f and la < hi), -1))
    return owners


def encode_window(tokenizer, words: list[str], lo: int, hi: int) -> tuple[list[int], np.ndarray]:
    """Token ids of words ``lo..hi-1`` with the tokenizer's specials, and each token's word (-1: none)."""
    return encode_windows(tokenizer, [(words, lo, hi)])[0]


def encode_windows(tokenizer, windows: list[tuple[list[str], int, int]]) -> list[tuple[list[int], np.ndarray]]:
    """``encode_window`` of many ``(words, lo, hi)``, tokenized in one call."""
    if not windows:
        return []
    texts = [" ".join(words[lo:hi]) for words, lo, hi in windows]
    enc = tokenizer(texts, return_offsets_mapping=True)
    out = []
    for (words, lo, hi), text, ids, offsets in zip(windows, texts, enc["input_ids"], enc["offset_mapping"]):
        starts = np.cumsum([0] + [len(w) + 1 for w in words[lo:hi][:-1]])
        # A token of spaces alone (BPE's lone "Ġ" before punctuation) overlaps no word, as in encode_spans.
        real = np.array([b > a and not text[a:b].isspace() for a, b in offsets], dtype=bool)
        ends = np.array([b for _, b in offsets], dtype=int)
        owner = np.full(len(ids), -1)
        owner[real] = lo + np.searchsorted(starts, ends[real] - 1, side="right") - 1
        out.append((list(ids), owner))
    return out
