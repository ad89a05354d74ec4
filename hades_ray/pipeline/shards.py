"""Shards and their completion markers.

A shard is a fixed, deterministic slice of the input (a file, or a row range of one) and the unit of
resume: its worker writes the shard's data files, then ``markers/part-NNNNN.json`` last, so a shard
with a marker is whole. The driver only plans shards and reads markers; it never holds a shard's rows.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from hades_ray.pipeline import storage

MARKERS = "markers"


@dataclass(frozen=True)
class Shard:
    """Rows ``[first_row, end_row)`` of ``source`` (0-based; lines for JSONL, rows for Parquet)."""

    index: int
    source: str  # a path or URI, or a named built-in corpus
    fmt: str  # jsonl | parquet | demo
    first_row: int
    end_row: int
    byte_start: int = 0  # JSONL: where row ``offset_row`` begins, so a worker seeks instead of scanning
    offset_row: int = 0  # the indexed row at ``byte_start`` (at or before ``first_row``)
    identity: str = ""  # the source's size and modification time: a changed file makes the shard stale
    sample_rate: float = 1.0  # keep each row with this probability (seeded per row; 1.0 keeps all)
    sample_seed: int = 0

    @property
    def name(self) -> str:
        return part_name(self.index)

    @property
    def rows(self) -> int:
        return self.end_row - self.first_row

    def fingerprint(self, config_digest: str) -> str:
        """Identifies the shard's input slice and the config that processes it."""
        text = json.dumps({**dataclasses.asdict(self), "config": config_digest}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


def part_name(index: int) -> str:
    return f"part-{index:05d}"


def marker_path(output: str | Path, index: int) -> str:
    return storage.join(output, MARKERS, f"{part_name(index)}.json")


def write_marker(output: str | Path, index: int, stats: dict) -> None:
    storage.write_text(marker_path(output, index), json.dumps(stats, indent=1, sort_keys=True))


def read_markers(output: str | Path) -> dict[int, dict]:
    """Every finished shard's marker, by shard index (read in parallel: an object store is slow per file)."""
    paths = storage.list_files(storage.join(output, MARKERS), (".json",), recursive=False)
    with ThreadPoolExecutor(max_workers=16) as pool:
        texts = list(pool.map(storage.read_text, paths))
    markers = {}
    for path, text in zip(paths, texts):
        index = int(path.rsplit("/", 1)[1].split("-")[1].split(".")[0])
        markers[index] = json.loads(text)
    return markers


def finished_shards(output: str | Path) -> list[int]:
    return sorted(
        int(p.rsplit("/", 1)[1].split("-")[1].split(".")[0])
        for p in storage.list_files(storage.join(output, MARKERS), (".json",), recursive=False)
    )
