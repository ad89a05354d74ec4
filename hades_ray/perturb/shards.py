"""Output shards: deterministic names, completion markers written last, and the merged views.

Shard k holds input rows [k * shard_size, (k + 1) * shard_size) of the input stream. Its marker
(``markers/part-0000k.json``) is written after its data by rename, so a shard with a marker is whole.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SPAN_TYPE = pa.struct(
    [
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("orig_start", pa.int64()),
        ("orig_end", pa.int64()),
        ("original", pa.string()),
        ("replacement", pa.string()),
        ("ner", pa.string()),
        ("pos", pa.string()),
    ]
)
POOL_SCHEMA = pa.schema(
    [
        ("doc_id", pa.string()),
        ("title", pa.string()),
        ("original", pa.string()),
        ("perturbed", pa.string()),
        ("ppl", pa.float64()),
        ("candidate", pa.int32()),
        ("candidate_ppls", pa.list_(pa.float64())),
        ("spans", pa.list_(SPAN_TYPE)),
        ("shard", pa.int32()),
        ("row", pa.int64()),
    ]
)


def part_name(shard: int) -> str:
    return f"part-{shard:05d}"


def atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def shard_fingerprint(rows, config_digest: str) -> str:
    """Identifies a shard's input rows and the config that processes them."""
    digest = hashlib.sha256(config_digest.encode())
    for row in rows:
        digest.update(f"{row.doc_id}\x00{row.text}\x00{row.reject}\x01".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def read_marker(output: Path, shard: int) -> dict | None:
    path = output / "markers" / f"{part_name(shard)}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def write_shard(
    output: Path, shard: int, pool_rows: list[dict], instances: list[dict], quarantine: list[dict], stats: dict
) -> None:
    """Data files first (each by rename), the marker last."""
    name = part_name(shard)
    table = pa.Table.from_pylist(pool_rows, schema=POOL_SCHEMA)
    pool_path = output / "pool" / f"{name}.parquet"
    pool_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = pool_path.with_name(f".{pool_path.name}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, pool_path)
    atomic_write_text(output / "instances" / f"{name}.jsonl", _jsonl(instances))
    atomic_write_text(output / "quarantine" / f"{name}.jsonl", _jsonl(quarantine))
    atomic_write_text(output / "markers" / f"{name}.json", json.dumps(stats, indent=1, sort_keys=True))


def _jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def finished_shards(output: Path) -> list[int]:
    return sorted(int(p.stem.split("-")[1]) for p in (output / "markers").glob("part-*.json"))


def merge_views(output: Path, shards: list[int]) -> None:
    """Rebuild ``instances.jsonl`` and ``quarantine.jsonl`` from the finished shards, in shard order,
    so a rerun never duplicates a line."""
    for view in ("instances", "quarantine"):
        target = output / f"{view}.jsonl"
        tmp = target.with_name(f".{target.name}.tmp")
        with tmp.open("w", encoding="utf-8") as out:
            for shard in shards:
                part = output / view / f"{part_name(shard)}.jsonl"
                if part.is_file():
                    out.write(part.read_text(encoding="utf-8"))
        os.replace(tmp, target)
