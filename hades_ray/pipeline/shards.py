"""Shards, their completion markers (``_markers/part-NNNNN.json``, written last) and the one skip
policy (``plan_work``), as pipeline/README.md describes them."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow.fs as pafs

from hades_ray.pipeline import storage

MARKERS = "_markers"
ROLL_UP = "_index.jsonl"  # in MARKERS: the driver's copy of the markers it merged (a leading _: no marker)
LEGACY_MARKERS = "markers"  # written by hades_ray before one engine ran every job


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


def marker_text(stats: dict) -> str:
    """A marker as written: the same text on disk and in the stats row the driver receives."""
    return json.dumps(stats, indent=1, sort_keys=True)


def write_marker(output: str | Path, index: int, stats: dict) -> str:
    text = marker_text(stats)
    storage.write(marker_path(output, index), text)
    return text


def _marker_paths(output: str | Path) -> list[str]:
    return storage.list_files(storage.join(output, MARKERS), (".json",), recursive=False)


def list_markers(output: str | Path) -> list[storage.Listed]:
    return storage.list_infos(storage.join(output, MARKERS), (".json",), recursive=False)


def _index(path: str) -> int:
    return int(path.rsplit("/", 1)[1].split("-")[1].split(".")[0])


def read_markers(output: str | Path) -> dict[int, dict]:
    """Every finished shard's marker, by shard index (read in parallel: an object store is slow per file)."""
    return load_markers(output)[0]


def load_markers(output: str | Path) -> tuple[dict[int, dict], bool]:
    """(every finished shard's marker by shard index, whether the roll-up holds exactly these). Each
    marker is read at most once: one the last run's roll-up (``_markers/_index.jsonl``) holds, unchanged
    since (same size and modification time, older than the roll-up), is taken from it; the others are
    read concurrently."""
    listed = list_markers(output)
    rolled, rolled_at = _read_roll_up(output) if listed else ({}, 0)
    markers: dict[int, dict] = {}
    unread = []
    for entry in listed:
        known = rolled.get(entry.path.rsplit("/", 1)[1])
        if known and (known["size"], known["mtime_ns"]) == (entry.size, entry.mtime_ns) and entry.mtime_ns < rolled_at:
            markers[_index(entry.path)] = known["marker"]
        else:
            unread.append(entry.path)
    for path, text in zip(unread, storage.read_texts(unread)):
        markers[_index(path)] = json.loads(text)
    return markers, not unread and len(rolled) == len(listed)


def _roll_up_path(output: str | Path) -> str:
    return storage.join(output, MARKERS, ROLL_UP)


def _read_roll_up(output: str | Path) -> tuple[dict[str, dict], int]:
    """The roll-up's entries by marker file name, and its own modification time (none: empty, 0)."""
    path = _roll_up_path(output)
    info = storage.file_info(path)
    if info.type != pafs.FileType.File:
        return {}, 0
    try:
        entries = [json.loads(line) for line in storage.read_text(path).splitlines() if line]
    except (ValueError, OSError):  # a roll-up that cannot be read is only a cache: read the markers
        return {}, 0
    return {e["name"]: e for e in entries}, info.mtime_ns or 0


def write_roll_up(output: str | Path, markers: dict[int, dict]) -> None:
    """What the driver holds of every finished shard's marker, in one file, for the next run's
    ``load_markers``: one GET instead of one a shard. Markers it does not hold are left out."""
    lines = []
    for entry in list_markers(output):
        index = _index(entry.path)
        if index in markers:
            item = {"name": entry.path.rsplit("/", 1)[1], "size": entry.size, "mtime_ns": entry.mtime_ns}
            lines.append(json.dumps({**item, "marker": markers[index]}, sort_keys=True) + "\n")
    storage.write(_roll_up_path(output), "".join(lines))


def iter_markers(output: str | Path, indices: set[int] | None = None):
    """The finished shards' markers in shard order, one at a time (bounded memory however many)."""
    for path in _marker_paths(output):
        if indices is None or _index(path) in indices:
            yield json.loads(storage.read_text(path))


def finished_shards(output: str | Path) -> list[int]:
    return sorted(_index(p) for p in _marker_paths(output))


class StaleShardError(FileExistsError):
    """A finished shard was made from other input or other settings."""


def check_layout(output: str | Path) -> None:
    """An output written before markers moved to ``_markers/`` is not silently redone from scratch."""
    legacy = storage.list_files(storage.join(output, LEGACY_MARKERS), (".json",), recursive=False)
    if legacy and not _marker_paths(output):
        raise StaleShardError(
            f"{storage.join(output, LEGACY_MARKERS)} holds markers of an older hades_ray; rename that folder "
            f"to {MARKERS} to resume this output, or write to a new --output"
        )


def plan_work(shards: list[Shard], markers: dict[int, dict], digest: str, force: bool) -> tuple[list[Shard], int]:
    """(shards to run, shards already finished); raises when finished shards would mix with new ones."""
    planned = {s.index for s in shards}
    other = sorted(i for i, m in markers.items() if m.get("digest") != digest)
    if force:
        left = [i for i in other if i not in planned]
        if left:
            raise StaleShardError(
                f"--force redoes shards {describe(sorted(planned))} only, but shards {describe(left)} of this "
                "output were made with other settings and would be mixed with the new ones; rerun with --force "
                "over the whole input, or write to a new --output"
            )
        return list(shards), 0
    stale = [s.index for s in shards if s.index in markers and _fingerprint(markers[s.index]) != s.fingerprint(digest)]
    stale += [i for i in other if i not in stale]
    if stale:
        raise StaleShardError(
            f"shards {describe(sorted(stale))} of this output were made from other input rows or other settings; "
            "rerun with --force to redo them, or write to a new --output"
        )
    todo = [s for s in shards if s.index not in markers]
    return todo, len(shards) - len(todo)


def _fingerprint(marker: dict) -> str | None:
    return marker.get("fingerprint")


def describe(indices: list[int]) -> str:
    """The first few part names of a list of shards, for messages."""
    shown = ", ".join(part_name(i) for i in indices[:5])
    return shown + (f" and {len(indices) - 5} more" if len(indices) > 5 else "")
