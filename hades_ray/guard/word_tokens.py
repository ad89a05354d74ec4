"""``token_words`` of each row's growing text, tokenizing only the words its previous text did not have.

The causal judge needs the token-to-word map of a row's whole text at every step, to place ``score``'s
windows (hades_ray/score/causal.py). The text only grows at its end, or is cut back to a word's start
by a rollback, so the words it shares with the previous step's text keep their tokens wherever the
tokenizer cuts a text at the space before a word exactly as it cuts the longer text there: byte-level
BPE with GPT-2's pre-tokenizing pattern and no normalizer (a space starts a new piece, so no token
spans it). For those tokenizers only the words after the shared ones are tokenized again (one call for
all rows); any other tokenizer gets the whole text tokenized, as before.
"""

from __future__ import annotations

import json

import numpy as np

from hades_ray.detect.spans import token_words_of


def cuts_at_spaces(tokenizer) -> bool:
    """Whether the tokenizer is byte-level BPE with GPT-2's pattern, no prefix space and no normalizer."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or backend.normalizer is not None or backend.pre_tokenizer is None:
        return False
    state = json.loads(backend.pre_tokenizer.__getstate__())
    return state.get("type") == "ByteLevel" and state.get("use_regex", True) and not state.get("add_prefix_space")


class TextTokens:
    """Per row: the words of its last text and their tokens' word indices."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.incremental = cuts_at_spaces(tokenizer)
        self.memo: dict[int, tuple[list[str], np.ndarray, np.ndarray]] = {}  # words, token words, token starts

    def of(self, rows: list[int], texts: list[list[str]]) -> list[np.ndarray]:
        """``token_words_of(tokenizer, texts)``, row ``rows[k]`` holding ``texts[k]``."""
        if not self.incremental:
            return token_words_of(self.tokenizer, texts)
        heads, tails = [], []
        for row, words in zip(rows, texts):
            old_words, old_tokens, old_starts = self.memo.get(row, ([], np.zeros(0, dtype=int), np.zeros(0, dtype=int)))
            shared = _shared(old_words, words)
            cut = sum(len(w) + 1 for w in words[:shared]) - 1  # the space before the first new word
            head = old_starts < cut  # a lone space token at the cut went with the word after it
            heads.append((shared, cut, old_tokens[head], old_starts[head]))
            if shared < len(words):  # a space before the first new word (none at the text's start)
                tails.append((len(tails), " " * bool(shared) + " ".join(words[shared:])))
        encoded = []
        if tails:
            encoded = self.tokenizer(
                [text for _, text in tails], add_special_tokens=False, return_offsets_mapping=True
            )["offset_mapping"]
        out, next_tail = [], 0
        for row, words, (shared, cut, tokens, token_starts) in zip(rows, texts, heads):
            if shared < len(words):
                offsets = encoded[next_tail]
                next_tail += 1
                starts = int(bool(shared)) + np.cumsum([0] + [len(w) + 1 for w in words[shared:-1]])
                ends = np.array([max(b, a + 1) for a, b in offsets]) if offsets else np.zeros(0, dtype=int)
                tokens = np.concatenate([tokens, shared + np.searchsorted(starts, ends - 1, side="right") - 1])
                base = max(cut, 0)
                token_starts = np.concatenate([token_starts, base + np.array([a for a, _ in offsets], dtype=int)])
            self.memo[row] = (list(words), tokens, token_starts)
            out.append(tokens)
        return out


def _shared(old: list[str], new: list[str]) -> int:
    """How many leading words two texts share."""
    n = 0
    for a, b in zip(old, new):
        if a != b:
            break
        n += 1
    return n
