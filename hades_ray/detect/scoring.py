"""p(hallucination) from a trained span classifier: a pure function and its pipeline stage.

Only sequences of equal token length share a forward, so no padding enters the arithmetic, and each
forward runs on enough rows that the CPU kernels round the same way whatever else shares it
(``hades_ray/detect/stable.py``): an instance's p(H) is the same bits alone or inside any batch.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import torch

from hades_ray.detect.settings import TOKENS
from hades_ray.detect.spans import encode_spans
from hades_ray.detect.stable import backbone_states, head_probabilities, pool_span
from hades_ray.pipeline.stage import Resources, Stage, setup_torch

SHARD_ROWS = 2048  # instances a sharded scoring job puts in one shard, and in-memory scoring in one table


@torch.no_grad()
def score_items(
    model, tokenizer, items: list[dict], mode: str, window: int, batch_size: int = 32, unit: str = TOKENS
) -> np.ndarray:
    """p(H) for ``{"words", "start", "end"}`` items, in batches of equal token length.

    The items are encoded once; each group of equal length is cut out of the padded tensors on the
    padding side, which leaves exactly its unpadded encoding."""
    model.eval()
    out = np.zeros(len(items), dtype=np.float64)
    if not items:
        return out
    enc = encode_spans(tokenizer, items, mode, window, unit)
    lengths = enc["attention_mask"].sum(dim=1)
    left = getattr(tokenizer, "padding_side", "right") == "left"
    device = next(model.parameters()).device
    for length in sorted(set(lengths.tolist())):
        group = torch.nonzero(lengths == length).flatten()
        for lo in range(0, len(group), batch_size):
            idx = group[lo : lo + batch_size]
            cut = slice(-length, None) if left else slice(0, length)
            batch = {k: v[idx][:, cut].to(device) for k, v in enc.items()}
            out[idx.numpy()] = stable_probabilities(model, batch).cpu().numpy()
    return out


def stable_probabilities(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """p(H) of equal-length rows, as ``model(**batch)`` but independent of the batch's other rows."""
    states = backbone_states(model.backbone, batch["input_ids"], batch["attention_mask"])
    return head_probabilities(model.head, pool_span(states, batch["span_mask"], model.pooling))


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
