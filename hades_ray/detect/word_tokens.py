"""Each row's growing text as tokens, tokenizing only the words its previous text did not have.

The causal judge needs, at every step, the token-to-word map of a row's whole text (to place ``score``'s
windows, hades_ray/detect/causal.py) and the tokens of the window that scores the new word. The text only
grows at its end, or is cut back to a word's start by a rollback, so the words it shares with the
previous step's text keep their tokens wherever the tokenizer cuts a text at the space before a word
exactly as it cuts the longer text there: byte-level BPE with GPT-2's pre-tokenizing pattern and no
normalizer (a space starts a new piece, so no token spans it). For those tokenizers only the words after
the shared ones are tokenized (one call for all rows), and a window's tokens are its first word's own
tokens followed by the text's tokens up to its end (where the tokenizer adds no specials); any other
tokenizer gets every text and window tokenized whole, as ``score`` does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from hades_ray.detect.spans import token_words_of

FIELDS = ("ids", "word", "start", "real")


def cuts_at_spaces(tokenizer) -> bool:
    """Whether the tokenizer is byte-level BPE with GPT-2's pattern, no prefix space and no normalizer."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or backend.normalizer is not None or backend.pre_tokenizer is None:
        return False
    state = json.loads(backend.pre_tokenizer.__getstate__())
    return state.get("type") == "ByteLevel" and state.get("use_regex", True) and not state.get("add_prefix_space")


def _empty(dtype=np.int64) -> np.ndarray:
    return np.zeros(0, dtype=dtype)


@dataclass
class _Tokens:
    """A text (words joined by single spaces) as tokens: each one's id, word, first character, and whether
    it covers more than spaces (a lone space token belongs to no word in a window, as in
    ``encode_windows``; in ``token_words`` it goes with the word before it)."""

    words: list[str] = field(default_factory=list)
    ids: np.ndarray = field(default_factory=_empty)
    word: np.ndarray = field(default_factory=_empty)
    start: np.ndarray = field(default_factory=_empty)
    real: np.ndarray = field(default_factory=lambda: _empty(bool))
    chars: list[int] = field(default_factory=lambda: [0])  # chars[k]: where word k starts (+1 past the end)

    def before(self, cut: int) -> list[np.ndarray]:
        """The fields of the tokens that start before character ``cut`` (tokens start in text order)."""
        keep = int(np.searchsorted(self.start, cut, side="left"))
        return [getattr(self, f)[:keep] for f in FIELDS]


class TextTokens:
    """Per row: the tokens of its last text (``of``), and windows of it (``windows``)."""

    def __init__(self, tokenizer):
        from hades_ray.detect.spans import special_token_count

        self.tokenizer = tokenizer
        self.incremental = cuts_at_spaces(tokenizer)
        self.plain_windows = self.incremental and special_token_count(tokenizer) == 0
        self.memo: dict[int, _Tokens] = {}
        self.alone: dict[str, tuple[list[int], np.ndarray]] = {}  # a word tokenized on its own: ids, real

    def begin(self) -> None:
        """New texts in every row (a word's own tokens stay known)."""
        self.memo.clear()

    def of(self, rows: list[int], texts: list[list[str]]) -> list[np.ndarray]:
        """``token_words_of(tokenizer, texts)``, row ``rows[k]`` holding ``texts[k]``."""
        if not self.incremental:
            return token_words_of(self.tokenizer, texts)
        plans, tails = [], []
        for row, words in zip(rows, texts):
            old = self.memo.get(row, _Tokens())
            shared = _shared(old.words, words)
            cut = old.chars[shared] - 1  # the space before the first new word
            plans.append((shared, cut, old.before(cut), old.chars))  # a lone space token at the cut: the next word's
            if shared < len(words):  # after a space, unless the new words start the text
                tails.append(" " * bool(shared) + " ".join(words[shared:]))
        encoded = iter(zip(tails, self._encode(tails)))
        out = []
        for row, words, (shared, cut, head, old_chars) in zip(rows, texts, plans):
            parts = [head]
            if shared < len(words):
                text, (ids, offsets) = next(encoded)
                parts.append(_fields(words, shared, max(cut, 0), text, ids, offsets))
            chars = old_chars[: shared + 1]
            for w in words[shared:]:
                chars.append(chars[-1] + len(w) + 1)
            self.memo[row] = _Tokens(list(words), *(np.concatenate(column) for column in zip(*parts)), chars)
            out.append(self.memo[row].word)
        return out

    def windows(self, rows: list[int], windows: list[tuple[list[str], int, int]]) -> list[tuple[list[int], np.ndarray]]:
        """``encode_windows(tokenizer, windows)``, window ``k`` cut from the text row ``rows[k]`` held at the
        last ``of``: its first word's own tokens, then the text's tokens up to its last word's end."""
        from hades_ray.detect.causal import encode_windows

        known = all(self.memo.get(r, _Tokens()).words == words for r, (words, _, _) in zip(rows, windows))
        if not (self.plain_windows and known):
            return encode_windows(self.tokenizer, windows)
        missing = sorted({words[lo] for words, lo, _ in windows} - set(self.alone))
        for word, (ids, offsets) in zip(missing, self._encode(missing)):
            self.alone[word] = (list(ids), np.array([b > a and not word[a:b].isspace() for a, b in offsets], bool))
        out = []
        for row, (words, lo, hi) in zip(rows, windows):
            text, (ids, real) = self.memo[row], self.alone[words[lo]]
            first = text.chars[lo + 1] - 1  # the space before the window's second word
            end = text.chars[hi] - 1  # the space after its last word
            inside = slice(*np.searchsorted(text.start, [first, end], side="left").tolist())
            owner = np.concatenate([np.where(real, lo, -1), np.where(text.real[inside], text.word[inside], -1)])
            out.append((ids + text.ids[inside].tolist(), owner))
        return out

    def _encode(self, texts: list[str]) -> list[tuple[list[int], list[tuple[int, int]]]]:
        """Token ids and character offsets of each text, without specials, in one call."""
        if not texts:
            return []
        backend = getattr(self.tokenizer, "backend_tokenizer", None)
        if backend is not None and backend.truncation is None and backend.padding is None:
            # What the tokenizer's call runs when it neither truncates nor pads, without building a
            # BatchEncoding: half of this step's tokenizing time went to that wrapping.
            return [(e.ids, e.offsets) for e in backend.encode_batch(texts, add_special_tokens=False)]
        enc = self.tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
        return list(zip(enc["input_ids"], enc["offset_mapping"]))


def _fields(words: list[str], shared: int, base: int, text: str, ids, offsets) -> list[np.ndarray]:
    """The token fields of ``text`` (the words from ``shared`` on, after a space unless they start the
    whole text), placed at character ``base`` of the whole text."""
    starts = int(bool(shared)) + np.cumsum([0] + [len(w) + 1 for w in words[shared:-1]])
    ends = np.array([max(b, a + 1) for a, b in offsets], dtype=np.int64) if offsets else _empty()
    word = shared + np.searchsorted(starts, ends - 1, side="right") - 1
    real = np.array([b > a and not text[a:b].isspace() for a, b in offsets], dtype=bool)
    start = base + np.array([a for a, _ in offsets], dtype=np.int64)
    return [np.array(ids, dtype=np.int64), word, start, real]


def _shared(old: list[str], new: list[str]) -> int:
    """How many leading words two texts share."""
    n = min(len(old), len(new))
    if old[:n] == new[:n]:  # the usual step: the text grew (one comparison in C)
        return n
    return next(k for k, (a, b) in enumerate(zip(old, new)) if a != b)
