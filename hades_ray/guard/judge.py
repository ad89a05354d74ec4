"""The guard's judge: an online detector that gives p(H) of a word from its left context only."""

from __future__ import annotations

import numpy as np

from hades_ray.guard.words import chunk_items


class OnlineJudge:
    """p(H) of each chunk's judged words, batched across prompts: one forward pass group per call."""

    def __init__(self, model_dir: str, threshold: float | None, words: str = "content", device: str = "cpu"):
        from hades_ray.detect.detector import Detector
        from hades_ray.detect.model import load_detector

        detector = Detector.open(model_dir)
        detector.require_online()
        self.tokenizer, self.model, self.settings = load_detector(model_dir, device=device)
        self.threshold = detector.threshold if threshold is None else float(threshold)
        self.words = words
        self.batch_size = 32

    def score_chunks(self, requests: list[tuple[str, str]]) -> list[list[dict]]:
        """For each ``(prefix, chunk)``: its judged words as ``{"start", "end", "word", "p"}`` (characters
        in the chunk), scored in one batched call; an empty list where it has none (punctuation, stop words)."""
        from hades_ray.detect.scoring import score_items
        from hades_ray.detect.spans import window_unit

        items, owner = [], []
        for k, (prefix, chunk) in enumerate(requests):
            for item in chunk_items(prefix, chunk, self.words):
                items.append(item)
                owner.append(k)
        window, unit = self.settings["window"], window_unit(self.settings)
        p = score_items(self.model, self.tokenizer, items, "online", window, self.batch_size, unit)
        scored: list[list[dict]] = [[] for _ in requests]
        for k, item, value in zip(owner, items, np.asarray(p, dtype=float)):
            start, end = item["span"]
            scored[k].append({"start": start, "end": end, "word": requests[k][1][start:end], "p": float(value)})
        return scored


def chunk_p(scored: list[dict]) -> float | None:
    """A chunk's p(H): its most suspicious judged word's (``None`` when nothing in it was judged)."""
    return max((w["p"] for w in scored), default=None)
