"""Corpus statistics of the feature detectors, fit on the training texts and saved as JSON + npz.

* TF-IDF: the span words' average term frequency in their text times their training-set IDF.
* PPMI: the span words' average positive PMI with the words within ``window`` of them, from
  co-occurrence counts over the training texts (the ``vocab_size`` most frequent words).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from hades_ray.pipeline import storage


class LexicalStats:
    def __init__(self, idf: dict[str, float], vocab: list[str], counts: sp.csr_matrix, window: int):
        self.idf, self.vocab, self.counts, self.window = idf, vocab, counts.tocsr(), window
        self.index = {w: i for i, w in enumerate(vocab)}
        self.default_idf = max(idf.values(), default=1.0)  # an unseen word is as rare as the rarest
        self.row_sums = np.asarray(self.counts.sum(axis=1)).ravel()
        self.total = float(self.row_sums.sum()) or 1.0

    @classmethod
    def fit(cls, texts: list[list[str]], vocab_size: int = 5000, window: int = 5) -> LexicalStats:
        from sklearn.feature_extraction.text import TfidfVectorizer

        lowered = [[w.lower() for w in words] for words in texts]
        tfidf = TfidfVectorizer(analyzer=lambda words: words).fit(lowered)
        idf = {w: float(tfidf.idf_[i]) for w, i in tfidf.vocabulary_.items()}
        freq = Counter(w for words in lowered for w in words)
        vocab = [w for w, _ in freq.most_common(vocab_size)]
        index = {w: i for i, w in enumerate(vocab)}
        rows, cols = [], []
        for words in lowered:
            ids = np.array([index.get(w, -1) for w in words])
            for d in range(1, window + 1):
                a, b = ids[:-d], ids[d:]
                keep = (a >= 0) & (b >= 0)
                rows += [a[keep], b[keep]]
                cols += [b[keep], a[keep]]
        r = np.concatenate(rows) if rows else np.zeros(0, int)
        c = np.concatenate(cols) if cols else np.zeros(0, int)
        counts = sp.coo_matrix((np.ones(len(r)), (r, c)), shape=(len(vocab), len(vocab))).tocsr()
        return cls(idf, vocab, counts, window)

    def tfidf(self, words: list[str], start: int, end: int) -> float:
        lowered = [w.lower() for w in words]
        freq = Counter(lowered)
        span = lowered[start : end + 1]
        return float(np.mean([freq[w] / len(lowered) * self.idf.get(w, self.default_idf) for w in span]))

    def ppmi(self, words: list[str], start: int, end: int) -> float:
        lowered = [w.lower() for w in words]
        span = [self.index[w] for w in lowered[start : end + 1] if w in self.index]
        context = [
            self.index[w]
            for w in lowered[max(0, start - self.window) : start] + lowered[end + 1 : end + 1 + self.window]
            if w in self.index
        ]
        if not span or not context:
            return 0.0
        joint = self.counts[span][:, context].toarray()
        expected = np.outer(self.row_sums[span], self.row_sums[context]) / self.total
        with np.errstate(divide="ignore", invalid="ignore"):
            pmi = np.where(joint > 0, np.log(joint / np.maximum(expected, 1e-12)), 0.0)
        return float(np.maximum(pmi, 0.0).mean())

    def features(self, words: list[str], start: int, end: int) -> list[float]:
        return [self.tfidf(words, start, end), self.ppmi(words, start, end)]

    def save(self, directory: str | Path) -> None:
        directory = Path(directory)
        meta = {"idf": self.idf, "vocab": self.vocab, "window": self.window}
        storage.write(directory / "lexical.json", json.dumps(meta))
        with storage.open_atomic(directory / "cooccurrence.npz", "wb") as handle:
            sp.save_npz(handle, self.counts)

    @classmethod
    def load(cls, directory: str | Path) -> LexicalStats:
        directory = Path(directory)
        meta = json.loads((directory / "lexical.json").read_text(encoding="utf-8"))
        return cls(meta["idf"], meta["vocab"], sp.load_npz(directory / "cooccurrence.npz"), meta["window"])
