"""The layout of a work directory: where the pool is, and one folder per round.

WORKDIR/workdir.json          {"pool": PATH or URI} when the pool lives elsewhere (else WORKDIR/pool)
WORKDIR/features/             part-NNNNN.parquet per pool shard (similarity, NER, POS, lemmas) + _markers/
WORKDIR/round-000/            batch.jsonl (items for judges), round.json (every count), scores/ and
                              candidates/ (part-NNNNN.parquet per pool shard + _markers/, written by
                              workers), judgments/, quarantine/, exports/

The work directory itself is a local folder (judgments are imported into it); the pool may be a local
folder or any ``pyarrow.fs`` URI (``s3://``...), holding the perturbation job's parts and markers
(``readers.py`` reads them).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from hades_ray.pipeline import storage
from hades_ray.pipeline.shards import part_name, read_markers

WORKDIR_FILE = "workdir.json"


def round_dir(workdir: str | Path, round_index: int) -> Path:
    return Path(workdir) / f"round-{round_index:03d}"


def existing_rounds(workdir: str | Path) -> list[int]:
    return sorted(int(p.name.split("-")[1]) for p in Path(workdir).glob("round-[0-9][0-9][0-9]") if p.is_dir())


def set_pool(workdir: str | Path, pool: str | Path) -> None:
    """Record where the pool lives; a recorded pool is never silently replaced by another."""
    workdir = Path(workdir)
    storage.makedirs(workdir)
    path = workdir / WORKDIR_FILE
    pool = str(pool) if storage.is_uri(pool) else str(Path(pool).resolve())
    if path.is_file():
        recorded = json.loads(path.read_text())["pool"]
        if recorded != pool:
            raise FileExistsError(f"{workdir} already uses the pool {recorded}; not switching to {pool}")
        return
    storage.write_json_atomic(path, {"pool": pool})


def pool_dir(workdir: str | Path) -> str:
    """The pool's path or URI; raises when it holds no finished shard."""
    path = Path(workdir) / WORKDIR_FILE
    pool = json.loads(path.read_text())["pool"] if path.is_file() else str(Path(workdir) / "pool")
    if not read_markers(pool):
        raise FileNotFoundError(
            f"no finished pool shard at {pool} (expected the perturbation job's _markers/part-NNNNN.json and "
            "instances/part-NNNNN.parquet there); run `hades-ray perturb` into WORKDIR/pool or pass --pool"
        )
    return pool


def part_path(folder: str, index: int) -> str:
    """Pool shard ``index``'s part in a folder of parts (the pool's ``instances``, ``features``, a
    round's ``scores`` and ``candidates``): each folder reads as one Parquet dataset."""
    return storage.join(folder, f"{part_name(index)}.parquet")


def write_part(folder: str, schema: pa.Schema, index: int, table: pa.Table) -> dict:
    """A pass's writer (on a worker): shard ``index``'s part holds ``schema``'s columns of ``table``.
    Returns no stats of its own (the engine's marker records the rows)."""
    storage.write_table(part_path(folder, index), table.select(schema.names).cast(schema))
    return {}
