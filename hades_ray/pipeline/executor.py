"""One executor for every job with model stages: an ordered list of stages between a shard reader and
a shard writer, run on Ray Data (actor pools that live for the whole job) or serially in-process.

The reader turns one shard into one block and every stage takes whole blocks (``batch_size=None``),
so a shard's rows stay together from reader to writer; stages cut blocks into their own batches.
The writer runs on a worker, writes the shard's files and its marker, and returns one small stats
row: that row is all the driver ever receives.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator

import pyarrow as pa
from ray.data.datasource import Datasource

from hades_ray.pipeline.errors import ResourceError
from hades_ray.pipeline.shards import Shard
from hades_ray.pipeline.stage import Stage, StageActor

log = logging.getLogger(__name__)
ShardReader = Callable[[Shard], pa.Table]
ShardWriter = Callable[[pa.Table], pa.Table]
# Read and write tasks take little CPU; a fractional share keeps them schedulable next to actor pools
# that hold the other logical CPUs (a 2-CPU cluster otherwise deadlocks silently).
IO_TASK_CPUS = 0.25
SHARD_BLOCK_BYTES = 2 * 1024**3  # a shard stays one block: Ray Data must never split it


def run_in_process(shards: list[Shard], read: ShardReader, stages: list[Stage], write: ShardWriter) -> Iterator[dict]:
    """The same stages, serially in this process: for debugging and tests."""
    for stage in stages:
        stage.setup()
    for shard in shards:
        table = read(shard)
        for stage in stages:
            table = stage(table)
        yield from write(table).to_pylist()


def check_resources(stages: list[Stage], nodes: list[dict]) -> None:
    """Fail fast, before any work, when an actor of a stage fits no node, or when one actor of every
    stage together does not fit the cluster (Ray would otherwise wait forever)."""
    alive = [n.get("Resources", {}) for n in nodes if n.get("Alive", True)]
    totals = {key: sum(n.get(key, 0.0) for n in alive) for key in ("CPU", "GPU")}
    needed = {"CPU": IO_TASK_CPUS, "GPU": 0.0}
    for stage in stages:
        r = stage.resources
        want = {"CPU": r.num_cpus, "GPU": r.num_gpus}
        if not any(all(node.get(k, 0.0) >= v for k, v in want.items() if v > 0) for node in alive):
            have = ", ".join(f"{totals[k]:g} {k}" for k in totals)
            raise ResourceError(
                f"stage {stage.name!r} needs {r.describe()} per actor, but no node of this cluster has that "
                f"(cluster: {have}); use a cluster with such nodes, or lower the stage's resources "
                "(num_gpus=0 runs it on CPU)"
            )
        needed["CPU"] += r.num_cpus * r.min_actors
        needed["GPU"] += r.num_gpus * r.min_actors
    short = {k: v for k, v in needed.items() if v > totals[k] + 1e-9}
    if short:
        detail = ", ".join(f"{v:g} {k} (cluster has {totals[k]:g})" for k, v in short.items())
        raise ResourceError(
            f"the stages' smallest pools need {detail} at once; lower min_concurrency or num_cpus/num_gpus"
        )


def run_on_ray(
    shards: list[Shard], read: ShardReader, stages: list[Stage], write: ShardWriter, check: bool = True
) -> Iterator[dict]:
    """Stream shards through the stages on Ray Data; yields each shard's stats row as it is written."""
    import ray
    from ray.data import ActorPoolStrategy, DataContext

    if not shards:
        return
    if check:
        check_resources(stages, ray.nodes())
    context = DataContext.get_current()
    context.target_max_block_size = max(context.target_max_block_size or 0, SHARD_BLOCK_BYTES)
    ds = ray.data.read_datasource(ShardDatasource(shards, read), num_cpus=IO_TASK_CPUS, override_num_blocks=len(shards))
    for stage in stages:
        r = stage.resources
        options = {"batch_size": None, "batch_format": "pyarrow", "num_cpus": r.num_cpus}
        if r.num_gpus:
            options["num_gpus"] = r.num_gpus
        if r.uses_actors:
            compute = ActorPoolStrategy(min_size=r.min_actors, max_size=r.max_actors)
            ds = ds.map_batches(StageActor, fn_constructor_args=(stage,), compute=compute, **options)
        else:
            ds = ds.map_batches(functools.partial(_call_stage, stage), **options)
    ds = ds.map_batches(write, batch_size=None, batch_format="pyarrow", num_cpus=IO_TASK_CPUS)
    yield from ds.iter_rows()


def run_shards(
    executor: str, shards: list[Shard], read: ShardReader, stages: list[Stage], write: ShardWriter, check: bool = True
) -> Iterator[dict]:
    """``run_on_ray`` for ``executor="ray"``, else ``run_in_process``."""
    if executor == "ray":
        return run_on_ray(shards, read, stages, write, check)
    return run_in_process(shards, read, stages, write)


def log_progress(stream: Iterator[dict], total: int, verb: str) -> None:
    """One log line per finished shard (the writers' stats rows carry the marker with its counts)."""
    import json

    from hades_ray.pipeline.shards import part_name

    for done, stats in enumerate(stream, start=1):
        counts = json.loads(stats["marker"])["counts"]
        log.info("shard %s %s (%d/%d): %s", part_name(stats["shard"]), verb, done, total, counts)


def _call_stage(stage: Stage, batch: pa.Table) -> pa.Table:
    return stage(batch)


def _read_shard(read: ShardReader, shard: Shard) -> list[pa.Table]:
    return [read(shard)]


class ShardDatasource(Datasource):
    """One Ray Data read task per planned shard, each yielding the shard as one block."""

    def __init__(self, shards: list[Shard], read: ShardReader):
        super().__init__()
        self.shards, self.read = shards, read

    def estimate_inmemory_data_size(self) -> int:
        return sum(s.rows for s in self.shards) * 2048

    def get_read_tasks(self, parallelism: int, per_task_row_limit=None, data_context=None) -> list:
        from ray.data.block import BlockMetadata
        from ray.data.datasource import ReadTask

        return [
            ReadTask(
                functools.partial(_read_shard, self.read, shard),
                BlockMetadata(num_rows=None, size_bytes=shard.rows * 2048, exec_stats=None, input_files=None),
            )
            for shard in self.shards
        ]
