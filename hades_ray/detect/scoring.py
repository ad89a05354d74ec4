"""p(hallucination) from a trained span classifier: a pure function and its pipeline stage.

Only sequences of equal token length share a forward, so no padding enters the arithmetic, and each
forward runs on enough rows that the CPU kernels round the same way whatever else shares it
(``hades_ray/detect/stable.py``): an instance's p(H) is the same bits alone or inside any batch.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import torch

from hades_ray.detect.spans import encode_spans
from hades_ray.detect.stable import backbone_states, head_probabilities, pool_span
from hades_ray.pipeline.stage import Resources, Stage, setup_torch


@torch.no_grad()
def score_items(model, tokenizer, items: list[dict], mode: str, window: int, batch_size: int = 32) -> np.ndarray:
    """p(H) for ``{"words", "start", "end"}`` items, in batches of equal token length.

    The items are encoded once; each group of equal length is cut out of the padded tensors on the
    padding side, which leaves exactly its unpadded encoding."""
    model.eval()
    out = np.zeros(len(items), dtype=np.float64)
    if not items:
        return out
    enc = encode_spans(tokenizer, items, mode, window)
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
    """Model: the exported span classifier's p(H) per instance (loaded once per actor); pred = p >= 1/2."""

    name = "detector"
    inputs = SPAN_INPUTS
    outputs = SCORE_OUTPUTS

    def __init__(self, resources: Resources, model_dir: str, forward_batch: int = 32):
        super().__init__(resources)
        self.model_dir, self.forward_batch = model_dir, forward_batch

    def setup(self) -> None:
        from hades_ray.detect.model import load_detector

        self.tokenizer, self.model, self.settings = load_detector(self.model_dir, device=setup_torch(self.resources))

    def process(self, batch: pa.Table) -> dict[str, np.ndarray]:
        mode, window = self.settings["mode"], self.settings["window"]
        p = score_items(self.model, self.tokenizer, items_from_table(batch), mode, window, self.forward_batch)
        return {"p_hallucination": p, "pred": (p >= 0.5).astype(np.int8)}


SHARD_ROWS = 2048


def _slice_from_store(refs: list, shard) -> pa.Table:
    import ray

    return ray.get(refs[shard.index])


def _slice_from_list(tables: list[pa.Table], shard) -> pa.Table:
    return tables[shard.index]


def _scores_only(table: pa.Table) -> pa.Table:
    return table.select(["row", "p_hallucination", "pred"])


def score_instances(stages: list[Stage], instances: list, executor: str, check: bool = True) -> tuple:
    """(p(H), pred) of a labelled or judged set (what ``predict``/``evaluate`` read into memory) through
    the detector's stages: on Ray Data actor pools, or in-process with ``executor="local"``. Only the
    row number and the two scores of each row come back from the workers. (Scoring a pool does not
    come here: ``hades_ray/select/scores.py`` has workers write the scores beside the pool.)"""
    import functools

    from hades_ray.pipeline.executor import run_in_process, run_on_ray
    from hades_ray.pipeline.shards import Shard

    table = pa.table(
        {
            "row": pa.array(range(len(instances)), pa.int64()),
            "words": pa.array([i.words for i in instances], pa.list_(pa.string())),
            "start": pa.array([i.start for i in instances], pa.int32()),
            "end": pa.array([i.end for i in instances], pa.int32()),
        }
    )
    slices = [table.slice(lo, SHARD_ROWS) for lo in range(0, table.num_rows, SHARD_ROWS)]
    shards = [Shard(k, "memory", "table", 0, s.num_rows) for k, s in enumerate(slices)]
    if executor == "ray":
        import ray

        read = functools.partial(_slice_from_store, [ray.put(s) for s in slices])
        rows = run_on_ray(shards, read, stages, _scores_only, check)
    else:
        rows = run_in_process(shards, functools.partial(_slice_from_list, slices), stages, _scores_only)
    p, pred = np.zeros(len(instances)), np.zeros(len(instances), dtype=int)
    for row in rows:
        p[row["row"]], pred[row["row"]] = row["p_hallucination"], row["pred"]
    return p, pred
