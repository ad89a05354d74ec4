"""Reading the pool: its finished shards, one shard's instances, and documents for display.

Pool shards are read from the perturbation job's ``instances/part-NNNNN.parquet``, and only where
``_markers/part-NNNNN.json`` exists (a shard without its marker may be half written); the merged
``instances.jsonl`` is for people and is never read here.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from hades_ray.pipeline import storage
from hades_ray.pipeline.shards import Shard, read_markers
from hades_ray.pipeline.steps import digest_of
from hades_ray.pool.layout import part_path, pool_dir
from hades_ray.pool.schemas import POOL_COLUMNS


def pool_shards(pool: str) -> list[Shard]:
    """One shard per finished pool part (its marker's digest as identity: a redone part is a new shard)."""
    shards = []
    for index, marker in sorted(read_markers(pool).items()):
        rows = int(marker.get("counts", {}).get("instances", 0))
        path = part_path(storage.join(pool, "instances"), index)
        shards.append(Shard(index, path, "parquet", 0, rows, identity=digest_of(marker)))
    return shards


def read_pool_part(shard: Shard, columns: tuple[str, ...] = POOL_COLUMNS) -> pa.Table:
    """One pool shard's instances (in the shard's own row order)."""
    return storage.read_parquet(shard.source, list(columns))


def pool_documents(workdir: str | Path, doc_ids_by_shard: dict[int, set[str]]) -> dict[str, dict]:
    """doc_id -> {"original", "spans"} for the given documents of the given pool shards (for display)."""
    pool = pool_dir(workdir)
    out: dict[str, dict] = {}
    for index, doc_ids in sorted(doc_ids_by_shard.items()):
        path = part_path(storage.join(pool, "pool"), index)
        if not storage.exists(path):
            continue
        table = storage.read_parquet(path, ["doc_id", "original", "spans"])
        wanted = pc.is_in(table.column("doc_id"), value_set=pa.array(sorted(doc_ids), pa.string()))
        for row in table.filter(wanted).to_pylist():
            out[str(row["doc_id"])] = {"original": row["original"], "spans": row["spans"]}
    return out
