"""A stage: declared input and output columns (Arrow types), declared resources, ``setup()`` that
loads its model once, and ``process()``, a pure function over a ``pyarrow.Table`` that tests call
without Ray.

A batch is one shard (the executor hands whole shards to stages, so that a shard's rows reach the
writer together); ``__call__`` cuts it into ``resources.batch_size`` rows at a time, calls
``process`` on each piece and checks the declared columns on the way out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc

# Engine column: an empty shard travels as one null row so its writer still runs; stages skip it.
PLACEHOLDER = "_placeholder"
# Engine columns ``_actor_<stage>``: which actor of a pool worked on the block (the marker records it).
ACTOR_PREFIX = "_actor_"


class StageError(RuntimeError):
    """A stage broke its declared contract (a missing input column, an undeclared output type)."""


@dataclass(frozen=True)
class Resources:
    """What one actor (or task) of a stage needs, and how many of them the pool may use."""

    num_cpus: float = 1.0
    num_gpus: float = 0.0
    min_actors: int = 1
    max_actors: int = 1
    batch_size: int = 64  # rows per ``process`` call; model stages chunk further by tokens
    torch_threads: int = 1
    uses_actors: bool = True  # False: stateless tasks (no model to keep loaded)
    # Blocks queued at each actor: the next one is already there when a block ends (Ray Data's
    # max_tasks_in_flight_per_actor); each costs a block of memory in the object store.
    blocks_in_flight: int = 2

    @classmethod
    def of(cls, stage_config, uses_actors: bool = True) -> Resources:
        """From a config ``StageResources`` (concurrency is the pool's maximum)."""
        return cls(
            num_cpus=stage_config.num_cpus,
            num_gpus=stage_config.num_gpus,
            min_actors=min(stage_config.min_concurrency, stage_config.concurrency),
            max_actors=stage_config.concurrency,
            batch_size=stage_config.batch_size,
            torch_threads=stage_config.torch_threads,
            uses_actors=uses_actors,
        )

    def describe(self) -> str:
        parts = [f"{self.num_cpus:g} CPU"] + ([f"{self.num_gpus:g} GPU"] if self.num_gpus else [])
        return " + ".join(parts)


class Stage:
    """Subclasses set ``name``, ``inputs``, ``outputs`` (and ``drops``) and implement ``process``."""

    name: ClassVar[str] = "stage"
    inputs: ClassVar[dict[str, pa.DataType]] = {}
    outputs: ClassVar[dict[str, pa.DataType]] = {}
    drops: ClassVar[tuple[str, ...]] = ()  # consumed columns that later stages do not need

    def __init__(self, resources: Resources):
        self.resources = resources

    def setup(self) -> None:
        """Load models once per actor; the base stage has nothing to load."""

    def process(self, batch: pa.Table) -> dict[str, list | pa.Array]:
        """The declared ``outputs`` for the rows of ``batch``, in the same order."""
        raise NotImplementedError

    def __call__(self, batch: pa.Table) -> pa.Table:
        missing = [c for c in self.inputs if c not in batch.column_names]
        if missing:
            raise StageError(f"stage {self.name!r} needs columns {missing}; the batch has {batch.column_names}")
        if PLACEHOLDER in batch.column_names and pc.any(batch.column(PLACEHOLDER)).as_py():
            held = pc.fill_null(batch.column(PLACEHOLDER), False)
            real = self(batch.filter(pc.invert(held)).drop_columns([PLACEHOLDER]))
            real = real.append_column(PLACEHOLDER, pa.array([False] * real.num_rows, pa.bool_()))
            return pa.concat_tables([real, self._passed_over(batch.filter(held))])
        started = time.perf_counter()
        pieces = [
            self._piece(batch.slice(b, self.resources.batch_size))
            for b in range(0, batch.num_rows, self.resources.batch_size)
        ]
        added = pa.concat_tables(pieces) if pieces else pa.table({k: pa.array([], t) for k, t in self.outputs.items()})
        seconds = time.perf_counter() - started
        out = self._without_outputs(batch)
        for name in self.outputs:
            out = out.append_column(name, added.column(name))
        # Each row carries its share of the stage's busy time, so a shard's marker can sum it.
        share = seconds / max(batch.num_rows, 1)
        return out.append_column(self._timing, pa.array([share] * batch.num_rows, pa.float64()))

    @property
    def _timing(self) -> str:
        return f"seconds_{self.name}"

    def _without_outputs(self, batch: pa.Table) -> pa.Table:
        dropped = (*self.drops, *self.outputs, self._timing)
        return batch.drop_columns([c for c in dropped if c in batch.column_names])

    def _passed_over(self, held: pa.Table) -> pa.Table:
        """Placeholder rows of empty shards: the stage's columns as nulls, no work done."""
        out = self._without_outputs(held.drop_columns([PLACEHOLDER]))
        for name, kind in self.outputs.items():
            out = out.append_column(name, pa.nulls(held.num_rows, kind))
        out = out.append_column(self._timing, pa.array([0.0] * held.num_rows, pa.float64()))
        return out.append_column(PLACEHOLDER, held.column(PLACEHOLDER))

    def _piece(self, batch: pa.Table) -> pa.Table:
        columns = self.process(batch)
        try:
            arrays = {
                name: pa.array(columns[name], type=kind)
                if not isinstance(columns[name], (pa.Array, pa.ChunkedArray))
                else columns[name].cast(kind)
                for name, kind in self.outputs.items()
            }
        except KeyError as error:
            raise StageError(f"stage {self.name!r} did not produce its declared column {error}") from None
        except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
            raise StageError(
                f"stage {self.name!r}: an output column does not match its declared type: {error}"
            ) from None
        return pa.table(arrays)


def setup_torch(resources: Resources) -> str:
    """Threads for a model actor, and its device. Worker processes are reused, so OMP_NUM_THREADS is
    unreliable and each actor sets torch's threads itself (hades_ray/pipeline/README.md)."""
    import torch

    torch.set_num_threads(max(1, resources.torch_threads))
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass  # already set in this reused worker process
    return "cuda" if resources.num_gpus > 0 and torch.cuda.is_available() else "cpu"


def worker_identity() -> dict:
    """Which process does the work (node, pid, and the Ray actor when there is one)."""
    import os
    import socket

    identity = {"host": socket.gethostname(), "pid": os.getpid()}
    try:
        import ray

        if ray.is_initialized():
            actor = ray.get_runtime_context().get_actor_id()
            identity["actor"] = actor or ""
    except Exception:  # noqa: BLE001 - identity is informative only; never fail a shard for it
        pass
    return identity


class StageActor:
    """The Ray Data callable class around a stage: ``setup()`` once, then one call per shard. Each
    block leaves stamped with this actor's identity (``_actor_<stage>``), for the shard's marker."""

    def __init__(self, stage: Stage):
        self.stage = stage
        self.stage.setup()
        who = worker_identity()
        self.identity = f"{who['host']}:{who['pid']}:{who.get('actor', '')}"

    def __call__(self, batch: pa.Table) -> pa.Table:
        out = self.stage(batch)
        column = ACTOR_PREFIX + self.stage.name
        out = out.drop_columns([column]) if column in out.column_names else out
        return out.append_column(column, pa.array([self.identity] * out.num_rows, pa.string()))
