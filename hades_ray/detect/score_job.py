"""``predict``'s and ``evaluate``'s scoring of a HaDes file, as a sharded job.

The driver reads the file first (a bad line fails naming file:line, or is quarantined); shard k is the
lines that hold the scored instances ``k * SHARD_ROWS`` to ``(k + 1) * SHARD_ROWS - 1`` (every valid
instance for predict, the labelled ones for evaluate), so the detector scores the same batches whatever
else the file holds. Parts: ``scores/part-NNNNN.parquet`` (``row``: the instance's 0-based line in the
file, ``p_hallucination``, ``pred``), streamed back in row order; ``scoring_folder`` removes the job's
folder once the caller's output is written.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa

from hades_ray.detect.data import LoadReport, numbered_instances
from hades_ray.detect.detector import Detector
from hades_ray.detect.file_shards import plan_scoring, read_scoring_shard
from hades_ray.detect.scoring import SHARD_ROWS
from hades_ray.errors import UserError
from hades_ray.io.hades_format import write_instances
from hades_ray.metrics import binary_metrics
from hades_ray.pipeline import storage
from hades_ray.pipeline.executor import Executor
from hades_ray.pipeline.job import ShardJob
from hades_ray.pipeline.shards import Shard, part_name

SCORES = "scores"
PART_SCHEMA = pa.schema([("row", pa.int64()), ("p_hallucination", pa.float64()), ("pred", pa.int8())])


def score_rows(
    detector: Detector, detect, path: str | Path, rows: list[int], folder: Path, executor: Executor, labelled_only: bool
) -> Iterator[tuple[int, float, int]]:
    """Score the instances on lines ``rows`` of ``path`` (what the driver's read kept, in order) into
    ``folder`` with ``executor``; returns their ``(row, p(H), pred)``, streamed back from the parts."""
    source = str(Path(path).resolve())
    read, stages = functools.partial(read_scoring_shard, labelled_only), functools.partial(detector.stages, detect)
    view = detector.store_view(detect)
    if view is not None:  # what a frozen model computes comes from the file's store, made once
        from hades_ray.detect.reps import file_store, stored_scoring

        store = file_store(path, view, detect, executor)
        columns, scoring = stored_scoring(detector, view)
        read = functools.partial(read_scoring_shard_with, store.folder, columns, labelled_only)
        stages = functools.partial(list, scoring)
    job = ShardJob(
        name="evaluate" if labelled_only else "predict",
        output=str(folder),
        digest=scoring_digest(detector, detect, labelled_only),
        plan=functools.partial(plan_scoring, source, rows, every=SHARD_ROWS),
        read=read,
        stages=stages,
        write=functools.partial(write_scores, output=str(folder)),
        rows_verb="instances",
    )
    executor.run(job)
    return _streamed(path, rows, folder)


def _streamed(path: str | Path, rows: list[int], folder: Path) -> Iterator[tuple[int, float, int]]:
    shards = range(0, len(rows), SHARD_ROWS)  # the planned ones only, whatever else the folder holds
    for expected, (row, p, pred) in zip(rows, iter_scores(folder, len(shards)), strict=True):
        check_row(path, expected, row)
        yield row, p, pred


def check_row(path: str | Path, expected: int, row: int) -> None:
    """The scores streamed back belong to the instance the driver read (the file did not change)."""
    if row != expected:
        raise UserError(f"{path} changed while it was scored (line {expected + 1}); run the command again")


def predicted_records(path: str | Path, scores: Iterator[tuple[int, float, int]]) -> Iterator[dict]:
    """``predict``'s output: each scored instance of ``path`` as read (its bad lines were reported by the
    first read), with ``p_hallucination`` and ``pred``."""
    instances = numbered_instances(path, True, LoadReport())
    for (row, instance), (scored, p, pred) in zip(instances, scores, strict=True):
        check_row(path, row, scored)
        yield {**instance.to_json(), "p_hallucination": float(p), "pred": int(pred)}


def scoring_digest(detector: Detector, detect, labelled_only: bool) -> str:
    """What a part depends on: the detector's files, the detect section (its batch sizes shape the
    feature detectors' batches) and which instances are scored."""
    key = [detector.identity(), dataclasses.asdict(detect), labelled_only, SHARD_ROWS]
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()


def read_scoring_shard_with(store: str, columns: dict[str, str], labelled_only: bool, shard: Shard) -> pa.Table:
    """``read_scoring_shard`` with ``columns`` (store name -> name here) of each instance from the file's
    store, read from the store rows that the shard's lines hold."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    from hades_ray.detect.reps import PARTS, take_columns

    table = read_scoring_shard(labelled_only, shard)
    fs, inner = storage.resolve(storage.join(store, PARTS))
    lines = (pc.field("row") >= shard.first_row) & (pc.field("row") < shard.end_row)
    part = ds.dataset(inner, format="parquet", filesystem=fs).to_table(columns=["row", *columns], filter=lines)
    return take_columns(table, part, "row", columns, store)


def write_scores(index: int, table: pa.Table, output: str) -> dict:
    """A worker's write: shard ``index``'s scores, in row order."""
    part = table.select(PART_SCHEMA.names).sort_by("row").cast(PART_SCHEMA)
    storage.write_table(storage.join(output, SCORES, f"{part_name(index)}.parquet"), part)
    return {"counts": {"scored": part.num_rows}}


def iter_scores(folder: Path, shards: int) -> Iterator[tuple[int, float, int]]:
    """``(row, p(H), pred)`` of shards ``0 .. shards - 1``, in row order, one part in memory at a time."""
    for index in range(shards):
        part = storage.read_parquet(storage.join(folder, SCORES, f"{part_name(index)}.parquet"))
        yield from zip(*(part.column(c).to_pylist() for c in PART_SCHEMA.names))


@contextmanager
def scoring_folder(named: Path | None = None) -> Iterator[Path]:
    """The job's folder: ``named`` (kept if the caller fails, so a rerun resumes; removed once the
    caller's output is written), or a temporary one."""
    if named is None:
        with storage.scratch_folder("hades-scores-") as tmp:
            yield tmp
        return
    yield named
    storage.delete(named)


def score_arrays(scores: Iterator[tuple[int, float, int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(p(H), pred)`` arrays from a stream of scores."""
    triples = list(scores)
    p = np.array([p for _, p, _ in triples], dtype=np.float64)
    return p, np.array([pred for _, _, pred in triples], dtype=int)


def predict_file(detector: Detector, data_path, output_path, config=None, executor: Executor | None = None) -> Path:
    """Score every instance of ``data_path`` (labelled or not), on Ray per the config unless ``executor``
    says otherwise; writes JSONL with the input records plus ``p_hallucination`` and ``pred``. The shard
    parts live in ``OUTPUT.parts/`` until the JSONL is written (an interrupted run resumes from them)."""
    config = config or detector.config()
    report = LoadReport()
    output = Path(output_path)
    rows = [row for row, _ in numbered_instances(data_path, config.detect.skip_bad, report)]
    report.write_quarantine(output.parent)
    executor = executor or Executor.of(config.ray)
    with scoring_folder(output.with_name(output.name + ".parts")) as folder:
        scores = score_rows(detector, config.detect, data_path, rows, folder, executor, labelled_only=False)
        return write_instances(predicted_records(data_path, scores), output)


def evaluate_file(
    detector: Detector, data_path, config=None, executor: Executor | None = None, parts: Path | None = None
) -> dict:
    """The paper's metrics on the labelled instances of ``data_path`` (-1 ones are ignored), scored on
    Ray per the config unless ``executor`` says otherwise; the shard parts live in ``parts`` (or a
    temporary folder) until the metrics are computed."""
    config = config or detector.config()
    report = LoadReport()
    rows, labels = [], []
    for row, instance in numbered_instances(data_path, config.detect.skip_bad, report, labelled_only=True):
        rows.append(row)
        labels.append(instance.label)
    executor = executor or Executor.of(config.ray)
    with scoring_folder(parts) as folder:
        p, pred = score_arrays(score_rows(detector, config.detect, data_path, rows, folder, executor, True))
    return {**binary_metrics(labels, pred, p), **report.summary()}
