"""The shard passes of selection on the pipeline executor, and the markers of their derived outputs.

Every pass reads one pool shard per task, runs its stages, and a writer on the worker writes the
shard's part (``OUTPUT/part-NNNNN.parquet``) and then its marker (``OUTPUT/markers/part-NNNNN.json``),
returning one small stats row: the driver never holds a shard's rows. A part is reused when its
marker names the same settings digest and the same pool shard; anything else is recomputed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from hades_ray.pipeline import storage
from hades_ray.pipeline.executor import run_in_process, run_on_ray
from hades_ray.pipeline.shards import Shard, part_name
from hades_ray.pipeline.stage import Stage
from hades_ray.pipeline.storage import write_table

EXECUTORS = ("ray", "local")
# Markers of derived outputs live in ``_markers/``: Parquet dataset readers (pyarrow, pandas, Ray Data)
# skip names starting with "_", so ``pd.read_parquet(WORKDIR/round-001/candidates)`` reads just the parts.
MARKER_DIR = "_markers"


def write_marker(output: str, index: int, marker: dict) -> None:
    storage.write_text(storage.join(output, MARKER_DIR, f"{part_name(index)}.json"), json.dumps(marker, sort_keys=True))


def iter_markers(output: str) -> Iterator[dict]:
    """Every marker of a derived output, read one at a time (bounded memory however many shards)."""
    for path in storage.list_files(storage.join(output, MARKER_DIR), (".json",), recursive=False):
        yield json.loads(storage.read_text(path))


def part_path(output: str, index: int) -> str:
    return storage.join(output, f"{part_name(index)}.parquet")


def todo_shards(output: str, shards: list[Shard], digest: str, force: bool = False) -> list[Shard]:
    """The shards whose part is missing, or was made from other settings or another pool shard."""
    if force:
        return list(shards)
    markers = {
        m["shard"]: {"digest": m.get("digest"), "pool_identity": m.get("pool_identity")} for m in iter_markers(output)
    }
    return [
        s
        for s in shards
        if markers.get(s.index, {}).get("digest") != digest or markers[s.index].get("pool_identity") != s.identity
    ]


def with_shard_columns(table: pa.Table, shard: Shard) -> pa.Table:
    """Tag every row with its shard, so that the writer knows which part it writes."""
    table = table.append_column("shard", pa.array([shard.index] * table.num_rows, pa.int32()))
    return table.append_column("pool_identity", pa.array([shard.identity] * table.num_rows, pa.string()))


def write_part(
    output: str,
    digest: str,
    table: pa.Table,
    columns: pa.Schema,
    extra: dict | None = None,
    like: pa.Table | None = None,
) -> dict:
    """Write the shard's part (``columns`` only), then its marker last; returns the marker. ``like``: a
    table of the same shard to take its index from when ``table`` may be empty."""
    like = table if like is None else like
    index = int(like.column("shard")[0].as_py())
    write_table(part_path(output, index), table.select(columns.names).cast(columns))
    seconds = {
        name.removeprefix("seconds_"): round(float(pc.sum(table.column(name)).as_py() or 0.0), 4)
        for name in table.column_names
        if name.startswith("seconds_")
    }
    marker = {
        "shard": index,
        "digest": digest,
        "pool_identity": like.column("pool_identity")[0].as_py(),
        "rows": table.num_rows,
        "stage_seconds": seconds,
        "finished_at": time.time(),
        **(extra or {}),
    }
    write_marker(output, index, marker)
    return marker


def write_empty_part(output: str, digest: str, shard: Shard, columns: pa.Schema, extra: dict | None = None) -> dict:
    """A pool shard without instances still gets its (empty) part and marker, written by the driver."""
    write_table(part_path(output, shard.index), columns.empty_table())
    marker = {"shard": shard.index, "digest": digest, "pool_identity": shard.identity, "rows": 0, **(extra or {})}
    write_marker(output, shard.index, marker)
    return marker


def per_shard(table: pa.Table, write_one: Callable[[pa.Table], dict]) -> pa.Table:
    """Call ``write_one`` on each shard's rows of ``table`` (one shard per block, but never assume it);
    returns one stats row per shard, the marker as JSON."""
    shards = sorted(set(table.column("shard").to_pylist()))
    markers = [write_one(table.filter(pc.equal(table.column("shard"), index))) for index in shards]
    return pa.table({"shard": [m["shard"] for m in markers], "marker": [json.dumps(m) for m in markers]})


def run_pass(
    shards: list[Shard],
    read: Callable[[Shard], pa.Table],
    stages: list[Stage],
    write: Callable[[pa.Table], pa.Table],
    executor: str,
    check: bool = True,
) -> Iterator[dict]:
    """Each shard's marker, as its worker finishes it (Ray Data actor pools, or serially in-process)."""
    if executor not in EXECUTORS:
        raise ValueError(f"executor {executor!r}: choose ray or local")
    stream = (
        run_on_ray(shards, read, stages, write, check)
        if executor == "ray"
        else run_in_process(shards, read, stages, write)
    )
    for row in stream:
        yield json.loads(row["marker"])
