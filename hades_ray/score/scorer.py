"""p(H) for the target words of texts, with any detector folder ``hades-ray train`` writes.

- A transformer detector in online mode on a causal backbone: one forward per text window
  (``hades_ray/score/causal.py``).
- Any other transformer detector: each target's own view (``hades_ray/detect/spans.py``), each
  distinct view run once (offline, a text that fits the window is one view for all its words) and the
  views of all texts in the batch grouped by length (``hades_ray/score/views.py``).
- LR/SVM: the detector's own feature and linear stages, run in this process on the targets.

Each text's scores are the same bits alone or inside any batch (``hades_ray/detect/stable.py``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from hades_ray.detect.settings import TOKENS
from hades_ray.score.words import Targets


class WordScorer:
    """Loads a detector once; ``score`` gives each text's per-target p(H)."""

    def __init__(
        self, model_dir, mode: str | None = None, device: str = "cpu", forward_batch: int = 32, stride: int = 0
    ):
        from hades_ray.detect.detector import Detector

        self.model_dir = Path(model_dir)
        detector = Detector.open(self.model_dir)
        self.kind, self.mode = detector.kind, detector.scoring_mode(mode)
        self.forward_batch, self.stride = forward_batch, stride
        if self.kind == "transformer":
            from hades_ray.detect.model import load_detector
            from hades_ray.detect.spans import window_unit
            from hades_ray.score.causal import is_causal

            self.tokenizer, self.model, settings = load_detector(self.model_dir, device=device)
            self.window, self.unit, self.causal = settings["window"], window_unit(settings), is_causal(self.model)
        else:
            self.causal = False
            self.stages = detector.stages(detector.config().detect)
            for stage in self.stages:
                stage.setup()

    @property
    def one_forward(self) -> bool:
        """Whether texts are scored a window at a time (causal backbone, online, a token window: its
        windows are cut in tokens; a word window scores each word's own view)."""
        return self.kind == "transformer" and self.causal and self.mode == "online" and self.unit == TOKENS

    def score(self, texts: list[Targets]) -> list[np.ndarray]:
        if self.one_forward:
            return self._score_windows(texts)
        items = [{"words": t.words, "start": f, "end": la} for t in texts for f, la in zip(t.first, t.last)]
        p = self._score_items(items)
        out, cursor = [], 0
        for t in texts:
            out.append(p[cursor : cursor + len(t.first)])
            cursor += len(t.first)
        return out

    def _score_items(self, items: list[dict]) -> np.ndarray:
        if not items:
            return np.zeros(0)
        if self.kind == "transformer":
            from hades_ray.score.views import score_views, shared_views

            jobs, places = shared_views(self.tokenizer, items, self.mode, self.window, self.unit)
            p = score_views(self.model, jobs, self.forward_batch)
            return np.array([p[job][row] for job, row in places], dtype=np.float64)
        table = pa.table(
            {
                "words": pa.array([i["words"] for i in items], pa.list_(pa.string())),
                "start": pa.array([i["start"] for i in items], pa.int32()),
                "end": pa.array([i["end"] for i in items], pa.int32()),
            }
        )
        for stage in self.stages:
            table = stage(table)
        return np.asarray(table.column("p_hallucination").to_numpy(zero_copy_only=False), dtype=np.float64)

    def _score_windows(self, texts: list[Targets]) -> list[np.ndarray]:
        from hades_ray.score.causal import assign_targets, text_windows, window_job
        from hades_ray.score.views import score_views

        stride = self.stride or max(1, self.window // 4)  # 0: a quarter window
        jobs, places, leftovers = [], [], []
        out = [np.zeros(len(t.first)) for t in texts]
        for k, t in enumerate(texts):
            ranges = text_windows(self.tokenizer, t.words, self.window, stride)
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
            for (k, j), p in zip(leftovers, self._score_items(items)):
                out[k][j] = p
        return out
