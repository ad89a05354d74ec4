"""The columns a detector's stages read and write, and the span classifier's stage."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from hades_ray.pipeline.stage import Resources, Stage, setup_torch

SHARD_ROWS = 2048  # instances a sharded scoring job puts in one shard, and in-memory scoring in one table


def items_from_table(batch: pa.Table) -> list[dict]:
    """``{"words", "start", "end"}`` items from a batch's columns."""
    words, starts, ends = (batch.column(c).to_pylist() for c in ("words", "start", "end"))
    return [{"words": w, "start": int(s), "end": int(e)} for w, s, e in zip(words, starts, ends)]


SPAN_INPUTS = {"words": pa.list_(pa.string()), "start": pa.int32(), "end": pa.int32()}
SCORE_OUTPUTS = {"p_hallucination": pa.float64(), "pred": pa.int8()}


class SpanScoreStage(Stage):
    """Model: the span classifier's p(H) per instance, each in its own view (loaded once per actor);
    pred = p >= 1/2."""

    name = "detector"
    inputs = SPAN_INPUTS
    outputs = SCORE_OUTPUTS

    def __init__(self, resources: Resources, detector, forward_batch: int = 32):
        super().__init__(resources)
        self.detector, self.forward_batch = detector, forward_batch

    def setup(self) -> None:
        self.scorer = self.detector.scorer(device=setup_torch(self.resources), forward_batch=self.forward_batch)

    def process(self, batch: pa.Table) -> dict[str, np.ndarray]:
        p = self.scorer.score_spans(items_from_table(batch))
        return {"p_hallucination": p, "pred": (p >= 0.5).astype(np.int8)}


def spans_table(items: list[dict]) -> pa.Table:
    """The ``SPAN_INPUTS`` columns of ``{"words", "start", "end"}`` items, the table every detector stage reads."""
    columns = {name: [item[name] for item in items] for name in SPAN_INPUTS}
    return pa.table(columns, schema=pa.schema(SPAN_INPUTS))


def instances_table(instances: list) -> pa.Table:
    """``spans_table`` of HaDes instances."""
    return spans_table([{"words": i.words, "start": i.start, "end": i.end} for i in instances])
