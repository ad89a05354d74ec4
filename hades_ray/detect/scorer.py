"""A detector loaded in this process, scoring by the route ``Detector.route`` chose for its mode:

- ``windows`` (a causal backbone online, its window in tokens): one forward per text window
  (``hades_ray/detect/causal.py``);
- ``views``: each target's own view (``hades_ray/detect/spans.py``), each distinct view run once
  (offline, a text that fits the window is one view for all its words) and the views of all texts in
  the batch grouped by length (``hades_ray/detect/views.py``);
- ``linear`` (LR/SVM): the detector's own feature and linear stages, run in this process.

``score`` gives each text's per-target p(H) (what ``hades-ray score``, the service and the guard's
checks compute); ``score_spans`` gives each span's p(H) from its own view (``predict``, ``evaluate``
and the guard's encoder judge); ``incremental`` scores a growing text a new token at a time on each
row's key/value cache, the ``windows`` route's figures (``hades_ray/detect/incremental.py``: the guard's
causal judge). Each text's scores are the same bits alone or inside any batch
(``hades_ray/detect/stable.py``).
"""

from __future__ import annotations

import numpy as np

from hades_ray.detect.scoring import spans_table
from hades_ray.detect.views import score_spans
from hades_ray.pipeline.executor import run_stages


def online_reach(item: dict, window: int) -> dict:
    """``item`` with only the words its online view can read: the span and the ``window`` before it (a
    window of tokens holds at most that many words; twice that and 8 more leave room for a tokenizer
    that cuts a text's first word apart). The view is the same text, so the same bits, and tokenizing it
    costs the window, not the text before it (``spans.context_window``)."""
    lo = max(0, item["start"] - 2 * window - 8)
    if lo == 0 and len(item["words"]) == item["end"] + 1:
        return item
    return {"words": item["words"][lo : item["end"] + 1], "start": item["start"] - lo, "end": item["end"] - lo}


class Scorer:
    """Loads a detector once (``Detector.scorer``); ``score`` and ``score_spans`` give p(H)."""

    def __init__(self, detector, mode: str | None, device: str, forward_batch: int, stride: int):
        self.detector = detector
        self.mode = detector.scoring_mode(mode)
        self.route = detector.route(self.mode)
        self.window, self.unit, self.forward_batch = detector.window, detector.window_unit, forward_batch
        if self.route == "linear":
            self.stages = detector.stages(detector.config().detect)
            for stage in self.stages:
                stage.setup()
        else:
            self.tokenizer, self.model = detector.load_model(device)
            self.stride = stride or max(1, self.window // 4)  # 0: a quarter window

    @property
    def one_forward(self) -> bool:
        """Whether texts are scored a window at a time."""
        return self.route == "windows"

    def incremental(self, threshold: float | None, words: str, *, lang):
        """The judge of text that grows as it is generated (online only), whose cost per call is that of
        the new targets and the window, not of the text before them: on the ``windows`` route each row
        keeps the key/value cache of the window it is scored in (``CausalJudge``), so a new word costs its
        new tokens' forward; otherwise each new target's own view (``ViewJudge``)."""
        from hades_ray.detect.incremental import CausalJudge, ViewJudge

        if self.mode != "online":
            raise ValueError("incremental scoring needs online mode: an offline view reads the text after a word")
        if self.one_forward:
            return CausalJudge(self, threshold, words, lang=lang)
        return ViewJudge(self, threshold, words, lang=lang)

    def score_spans(self, items: list[dict]) -> np.ndarray:
        """p(H) of ``{"words", "start", "end"}`` items, each in its own view (each distinct view run once)."""
        if self.route == "linear":
            return self._linear(items)
        if self.mode == "online":
            items = [online_reach(item, self.window) for item in items]
        return score_spans(self.model, self.tokenizer, items, self.mode, self.window, self.forward_batch, self.unit)

    def score(self, texts: list) -> list[np.ndarray]:
        """Each text's p(H) per target (``Targets``: ``words``, and ``first``/``last`` unit per target)."""
        if self.route == "windows":
            return self._score_windows(texts)
        items = [{"words": t.words, "start": f, "end": la} for t in texts for f, la in zip(t.first, t.last)]
        p = self.score_spans(items)
        out, cursor = [], 0
        for t in texts:
            out.append(p[cursor : cursor + len(t.first)])
            cursor += len(t.first)
        return out

    def _linear(self, items: list[dict]) -> np.ndarray:
        if not items:
            return np.zeros(0)
        table = run_stages(spans_table(items), self.stages, setup=False)
        return np.asarray(table.column("p_hallucination").to_numpy(zero_copy_only=False), dtype=np.float64)

    def _score_windows(self, texts: list) -> list[np.ndarray]:
        from hades_ray.detect.causal import assign_targets, text_windows, window_job
        from hades_ray.detect.views import score_views

        jobs, places, leftovers = [], [], []
        out = [np.zeros(len(t.first)) for t in texts]
        for k, t in enumerate(texts):
            ranges = text_windows(self.tokenizer, t.words, self.window, self.stride)
            owners = assign_targets(ranges, t.first, t.last)
            for w, (lo, hi) in enumerate(ranges):
                mine = [j for j, o in enumerate(owners) if o == w]
                if mine:
                    first, last = [t.first[j] for j in mine], [t.last[j] for j in mine]
                    jobs.append(window_job(self.tokenizer, t.words, lo, hi, first, last))
                    places.append((k, mine))
            leftovers += [(k, j) for j, o in enumerate(owners) if o < 0]
        for (k, mine), p in zip(places, score_views(self.model, jobs, self.forward_batch)):
            out[k][mine] = p
        if leftovers:  # targets longer than a stride: their own online view
            items = [
                {"words": texts[k].words, "start": texts[k].first[j], "end": texts[k].last[j]} for k, j in leftovers
            ]
            for (k, j), p in zip(leftovers, self.score_spans(items)):
                out[k][j] = p
        return out
