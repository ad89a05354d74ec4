"""A sharded job, declared (pipeline/README.md). ``plan`` and ``summarize`` run on the driver, ``read``
and ``write`` on workers, so they must be picklable: module-level functions or ``functools.partial`` of them.

The engine adds four columns to every shard's rows and removes them before ``write``:
``_shard`` (its index), ``_fingerprint``, ``_rows`` (rows the reader produced, for the completeness
check) and ``_placeholder`` (an empty shard travels as one null row, so its writer still runs and
its marker is written; stages skip it).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from hades_ray.pipeline.shards import Shard, write_marker
from hades_ray.pipeline.stage import ACTOR_PREFIX, PLACEHOLDER, Stage, worker_identity

SHARD, FINGERPRINT, ROWS = "_shard", "_fingerprint", "_rows"
ENGINE_COLUMNS = (SHARD, FINGERPRINT, ROWS, PLACEHOLDER)
Mapper = Callable[[Callable, list], list]  # runs a function on each item, as Ray tasks or in-process
ShardWriter = Callable[[int, pa.Table], dict]  # (shard index, its rows) -> the shard's stats
SUMMARY = "summary.json"


class IncompleteShardError(RuntimeError):
    """A shard reached its writer without every row its reader produced (a bug, never bad input)."""


@dataclass
class ShardJob:
    """Everything the executor needs to run a job; see the module docstring for where each part runs."""

    name: str  # shown in progress lines and errors: "perturb", "score", ...
    output: str  # folder or URI that receives the parts, ``_markers/`` and ``summary.json``
    digest: str  # the settings a shard's output depends on; part of every shard's fingerprint
    plan: Callable[[Mapper], list[Shard]]  # driver: the shards of the whole input, in order
    read: Callable[[Shard], pa.Table]  # worker: one shard's rows (any schema; zero rows is fine)
    stages: Callable[[], list[Stage]]  # driver: built once the plan has work (models load in setup())
    write: ShardWriter  # worker: writes shard k's parts; returns its stats
    summarize: Callable[[dict], dict] | None = None  # driver: merged stats -> summary fields
    views: tuple[str, ...] = ()  # JSONL part folders concatenated into VIEW.jsonl in shard order
    resolved: dict[str, str] = field(default_factory=dict)  # files written beside the output once it is ours
    rows_verb: str = "rows"  # what a row is, for progress lines ("leads", "texts", "prompts")
    # None: no file, the caller records the summary (a folder that is itself a Parquet dataset of parts
    # must hold nothing else: pyarrow and pandas fail on a JSON file among the parts).
    summary_file: str | None = SUMMARY


def read_shard(job_read: Callable[[Shard], pa.Table], digest: str, shard: Shard) -> pa.Table:
    """A worker's read: the job's rows for ``shard`` with the engine's columns (one placeholder row
    when the shard has none)."""
    table = job_read(shard)
    rows = table.num_rows
    placeholder = rows == 0
    if placeholder:
        table = pa.table({f.name: pa.nulls(1, f.type) for f in table.schema}, schema=table.schema)
    n = table.num_rows
    table = table.append_column(SHARD, pa.array([shard.index] * n, pa.int32()))
    table = table.append_column(FINGERPRINT, pa.array([shard.fingerprint(digest)] * n, pa.string()))
    table = table.append_column(ROWS, pa.array([rows] * n, pa.int64()))
    return table.append_column(PLACEHOLDER, pa.array([placeholder] * n, pa.bool_()))


def write_shards(job_write: ShardWriter, output: str, digest: str, table: pa.Table) -> pa.Table:
    """A worker's write: for each shard in the block (one, but never assumed), check it is whole, let
    the job write its parts, then write its marker last. Returns one small stats row per shard:
    all the driver ever receives."""
    markers = []
    for index in sorted(set(table.column(SHARD).to_pylist())):
        rows = table.filter(pc.equal(table.column(SHARD), index))
        markers.append(_write_one(job_write, output, digest, int(index), rows))
    return pa.table({"shard": [m["shard"] for m in markers], "marker": [m["text"] for m in markers]})


def _write_one(job_write: ShardWriter, output: str, digest: str, index: int, table: pa.Table) -> dict:
    expected, fingerprint = int(table.column(ROWS)[0].as_py()), table.column(FINGERPRINT)[0].as_py()
    real = table.filter(pc.invert(table.column(PLACEHOLDER)))
    if real.num_rows != expected:
        raise IncompleteShardError(f"shard {index}: {real.num_rows} of {expected} rows reached the writer")
    seconds, actors = stage_seconds(real), stage_actors(real)
    engine = [*ENGINE_COLUMNS, *(ACTOR_PREFIX + name for name in actors)]
    stats = job_write(index, real.drop_columns(engine))
    marker = {
        **stats,
        "shard": index,
        "fingerprint": fingerprint,
        "digest": digest,
        "rows": expected,
        "stage_seconds": seconds,
        "worker": worker_identity(),  # the writer
        "actors": actors,  # each pool's actors that worked on this shard
        "finished_at": time.time(),
    }
    text = write_marker(output, index, marker)  # last: a shard with a marker is whole
    return {"shard": index, "text": text}  # the stats row carries the marker's text as written


def stage_seconds(table: pa.Table) -> dict[str, float]:
    """Each stage's busy seconds for the shard: stages stamp every row with its share (``seconds_*``)."""
    return {
        name.removeprefix("seconds_"): round(float(pc.sum(table.column(name)).as_py() or 0.0), 4)
        for name in sorted(table.column_names)
        if name.startswith("seconds_")
    }


def stage_actors(table: pa.Table) -> dict[str, list[str]]:
    """Which actors of each pool worked on the shard (``host:pid:actor``), from the ``_actor_*`` columns."""
    return {
        name.removeprefix(ACTOR_PREFIX): sorted(set(table.column(name).to_pylist()))
        for name in sorted(table.column_names)
        if name.startswith(ACTOR_PREFIX)
    }


def merge_stats(markers: Iterable[dict]) -> dict:
    """Sum the shards' stats: numbers add up, dicts of numbers add up key by key (counts, reasons,
    histograms, stage seconds); anything else (fingerprints, workers, times) is not merged."""
    totals: dict = {}
    for marker in markers:
        for key, value in marker.items():
            if key in ("shard", "finished_at"):
                continue
            if isinstance(value, bool):
                continue
            if isinstance(value, (int, float)):
                totals[key] = totals.get(key, 0) + value
            elif isinstance(value, dict) and all(isinstance(v, (int, float)) for v in value.values()):
                totals.setdefault(key, Counter()).update(value)
    return {k: dict(v) if isinstance(v, Counter) else v for k, v in totals.items()}
