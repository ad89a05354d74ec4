"""One executor for every sharded job (``hades_ray/pipeline/job.py`` declares one); README.md says
what it owns and how it runs a job on Ray Data or in this process."""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs
from ray.data.datasource import Datasource

from hades_ray.pipeline import storage
from hades_ray.pipeline.errors import ResourceError
from hades_ray.pipeline.job import Mapper, ShardJob, merge_stats, read_shard, write_shards
from hades_ray.pipeline.lock import OutputLock
from hades_ray.pipeline.pools import IO_TASK_CPUS, describe_pools, pool_sizes
from hades_ray.pipeline.progress import Progress
from hades_ray.pipeline.shards import Shard, check_layout, load_markers, part_name, plan_work, write_roll_up
from hades_ray.pipeline.stage import Stage, StageActor

log = logging.getLogger(__name__)
ShardReader = Callable[[Shard], pa.Table]
BlockWriter = Callable[[pa.Table], pa.Table]  # a block of shards -> their stats rows
# Read and write tasks take little CPU (pools.IO_TASK_CPUS); a fractional share keeps them schedulable
# next to actor pools that hold the other logical CPUs (a 2-CPU cluster otherwise deadlocks silently).
SHARD_BLOCK_BYTES = 2 * 1024**3  # a shard stays one block: Ray Data must never split it
# Above this a JSONL view is not merged into VIEW.jsonl (the driver would stream it all): the parts, which
# Ray Data, pandas and the rounds read as they are, are the dataset, and summary.json names them.
VIEW_MAX_BYTES = 256 * 1024**2


EXECUTORS = ("ray", "local")
AUTO = "auto"  # a command's --executor choice: local for input held in memory, ray for files


@dataclass(frozen=True)
class Executor:
    """Runs any ``ShardJob``: ``kind`` ray (a Ray Data job on ``address``, or a private local cluster)
    or local (in-process); ``force`` redoes finished shards instead of skipping them."""

    kind: str = "ray"
    force: bool = False
    address: str = ""  # empty: RAY_ADDRESS if set, else a private cluster on 127.0.0.1
    num_cpus: int = 0  # a private local cluster's CPUs (0: the machine's)
    check_resources: bool = True  # stop before any work when some stage's actor cannot be placed

    def __post_init__(self) -> None:
        if self.kind not in EXECUTORS:
            raise ValueError(f"executor {self.kind!r}: choose one of {', '.join(EXECUTORS)}")

    @classmethod
    def of(cls, ray_config, kind: str = "ray", force: bool = False, in_memory: bool = False) -> Executor:
        """From the config's ``ray`` section and the command's ``--executor`` and ``--force``; ``auto``
        runs in this process when the job's input is ``in_memory``, on Ray otherwise."""
        if kind == AUTO:
            kind = "local" if in_memory else "ray"
        return cls(kind, force, ray_config.address, ray_config.num_cpus, ray_config.check_resources)

    def mapper(self) -> Mapper:
        """Runs planning work (indexing input files) as small Ray tasks next to the data, or in-process.
        Ray is joined on the first call: a plan that needs no tasks, and finds every shard finished,
        starts no cluster."""
        if self.kind == "local":
            return lambda fn, items: [fn(item) for item in items]

        def on_ray(fn, items):
            from hades_ray.ray_runtime import task_mapper

            return task_mapper(self.address, self.num_cpus)(fn, items)

        return on_ray

    def run(self, job: ShardJob) -> dict:
        """Plan, skip finished shards, run the rest, merge: returns the summary written to ``summary.json``.
        A full disk or a store that failed through every retry ends it with a one-line ``StoreError``."""
        try:
            return self._plan_run_merge(job)
        except Exception as error:
            if (explained := storage.explain(error, job.output)) is not None:
                raise explained from None
            raise

    def _plan_run_merge(self, job: ShardJob) -> dict:
        started = time.perf_counter()
        with OutputLock(job.output) as lock:
            check_layout(job.output)
            shards = job.plan(self.mapper())
            markers, rolled_up = load_markers(job.output)
            todo, skipped = plan_work(shards, markers, job.digest, self.force)
            for name, text in job.resolved.items():
                storage.write(storage.join(job.output, name), text)
            log.info("%s: %d shards planned, %d to run, %d already finished", job.name, len(shards), len(todo), skipped)
            if todo:
                for marker in self._run(job, todo):
                    markers[marker["shard"]] = marker
                    lock.check()
            return finish(job, markers, len(todo), skipped, time.perf_counter() - started, rolled_up and not todo)

    def _run(self, job: ShardJob, todo: list[Shard]) -> Iterator[dict]:
        """Runs the shards; yields each one's marker as its writer reports it."""
        stages = job.stages()
        read = functools.partial(read_shard, job.read, job.digest)
        write = functools.partial(write_shards, job.write, job.output, job.digest)
        if self.kind == "ray":
            from hades_ray.ray_runtime import init_ray

            init_ray(self.address, self.num_cpus)
            stream = run_on_ray(todo, read, stages, write, self.check_resources)
        else:
            stream = run_in_process(todo, read, stages, write)
        planned = {s.index: s.rows for s in todo}
        with Progress(job.name, len(todo), sum(planned.values()), job.rows_verb) as progress:
            for row in stream:
                progress.done(row["shard"], planned[row["shard"]])
                yield json.loads(row["marker"])


def finish(
    job: ShardJob, markers: dict[int, dict], processed: int, skipped: int, seconds: float, rolled_up: bool = False
) -> dict:
    """Merge every finished shard's marker (``markers``: those read at the start and those the writers
    reported, so none is read again) into ``summary.json`` (the job's ``summary_file``; none when the
    job records its summary itself), write the JSONL views and the markers' roll-up (unless
    ``rolled_up``: it already holds exactly these)."""
    ordered = [markers[i] for i in sorted(markers)]
    views = write_views(job, sorted(markers), processed)
    if not rolled_up:
        write_roll_up(job.output, markers)
    merged = merge_stats(ordered)
    summary = job.summarize(merged) if job.summarize else dict(merged.get("counts", {}))
    summary["shards"] = {"total": len(ordered), "processed_now": processed, "skipped_finished": skipped}
    if views:
        summary["views"] = views
    busy = merged.get("stage_seconds", {})
    summary["timings"] = {
        "wall_seconds": round(seconds, 3),
        "stage_busy_seconds": {k: round(v, 3) for k, v in sorted(busy.items())},
        "stage_actors": actors_per_stage(ordered),
        **summary.get("timings", {}),  # a job's own figures derived from them (tokens per busy second)
    }
    if job.summary_file:
        storage.write(storage.join(job.output, job.summary_file), json.dumps(summary, indent=2) + "\n")
    return summary


def write_views(job: ShardJob, indices: list[int], processed: int) -> dict:
    """Concatenate each JSONL view's parts into ``VIEW.jsonl`` in shard order, unless it is already
    their concatenation (no shard ran, and it is as long as the parts and newer than all of them), or
    the parts hold more than ``VIEW_MAX_BYTES``: then the view is not written (an older one removed)
    and the returned entry, which goes into the summary, names the parts instead."""
    not_merged = {}
    for view in job.views:
        listed = {e.path: e for e in storage.list_infos(storage.join(job.output, view), (".jsonl",), recursive=False)}
        parts = [storage.join(job.output, view, f"{part_name(i)}.jsonl") for i in indices]
        missing = [p for p in parts if p not in listed]
        if missing:
            raise FileNotFoundError(f"{missing[0]}: the part of a finished shard is missing ({len(missing)} in all); "
                                    "delete that shard's marker and rerun to write it again")  # fmt: skip
        size = sum(listed[p].size for p in parts)
        target = storage.join(job.output, f"{view}.jsonl")
        if size > VIEW_MAX_BYTES:
            storage.delete(target)
            not_merged[view] = {"merged": False, "parts": storage.join(job.output, view, "part-*.jsonl"),
                                "files": len(parts), "bytes": size}  # fmt: skip
            continue
        info = storage.file_info(target)
        newest = max((listed[p].mtime_ns for p in parts), default=0)
        if processed or info.type != pafs.FileType.File or info.size != size or (info.mtime_ns or 0) < newest:
            storage.concatenate(parts, target)
    return not_merged


def actors_per_stage(markers) -> dict[str, int]:
    """How many distinct actors of each pool worked on the output's shards (from their markers)."""
    seen: dict[str, set] = {}
    for marker in markers:
        for stage, actors in marker.get("actors", {}).items():
            seen.setdefault(stage, set()).update(actors)
    return {stage: len(actors) for stage, actors in sorted(seen.items())}


def run_in_process(shards: list[Shard], read: ShardReader, stages: list[Stage], write: BlockWriter) -> Iterator[dict]:
    """The same stages, serially in this process: for debugging and tests."""
    for stage in stages:
        stage.setup()
    for shard in shards:
        yield from write(run_stages(read(shard), stages, setup=False)).to_pylist()


def run_stages(table: pa.Table, stages: list[Stage], setup: bool = True) -> pa.Table:
    """``table`` through ``stages`` in order, in this process: the executor's in-process path for one
    table (a judged set a detector trains on). ``setup`` loads the stages' models first; the
    in-process executor sets them up once for all its shards instead."""
    if setup:
        for stage in stages:
            stage.setup()
    for stage in stages:
        table = stage(table)
    return table


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
    shards: list[Shard], read: ShardReader, stages: list[Stage], write: BlockWriter, check: bool = True
) -> Iterator[dict]:
    """Stream shards through the stages on Ray Data; yields each shard's stats row as it is written."""
    import ray
    from ray.data import DataContext

    if not shards:
        return
    if check:
        check_resources(stages, ray.nodes())
    context = DataContext.get_current()
    context.target_max_block_size = max(context.target_max_block_size or 0, SHARD_BLOCK_BYTES)
    ds = ray.data.read_datasource(ShardDatasource(shards, read), num_cpus=IO_TASK_CPUS, override_num_blocks=len(shards))
    sizes = pool_sizes(stages, ray.nodes(), len(shards)) if check else None
    if sizes:
        log.info("actor pools: %s", describe_pools(stages, sizes))
    for i, stage in enumerate(stages):
        r = stage.resources
        options = {"batch_size": None, "batch_format": "pyarrow", "num_cpus": r.num_cpus}
        if r.num_gpus:
            options["num_gpus"] = r.num_gpus
        # Ray's public map_batches refuses whole blocks (batch_size None) for a GPU stage; a shard must
        # stay one block (the stage cuts its own batches), so GPU stages go through the method it calls.
        map_blocks = ds.map_batches_internal if r.num_gpus else ds.map_batches
        if r.uses_actors:
            compute = _pool(r, sizes[i] if sizes else 0, len(shards))
            ds = map_blocks(StageActor, fn_constructor_args=(stage,), compute=compute, **options)
        else:
            ds = map_blocks(functools.partial(_call_stage, stage), **options)
    ds = ds.map_batches(write, batch_size=None, batch_format="pyarrow", num_cpus=IO_TASK_CPUS)
    yield from ds.iter_rows()


def _pool(resources, size: int, blocks: int):
    """A pool started at ``size`` actors (sized to the cluster); without a size (``check_resources``
    off: an autoscaling cluster whose nodes start on demand) Ray's autoscaler grows it from the minimum.
    Each actor keeps ``blocks_in_flight`` blocks queued, so the next block is there when one ends."""
    from ray.data import ActorPoolStrategy

    if size:
        low = high = size
    else:
        high = max(1, min(resources.max_actors, blocks))
        low = min(resources.min_actors, high)
    return ActorPoolStrategy(min_size=low, max_size=high, max_tasks_in_flight_per_actor=resources.blocks_in_flight)


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
