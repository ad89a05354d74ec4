"""Perturbation input: planning shards over JSONL, Parquet (Wiki-40B too) or the embedded demo corpus,
and reading one shard on a worker, every row as a document or with a ``reject`` reason.

The driver only lists files and reads Parquet footers; JSONL files are indexed (a byte offset every
``shard_size`` lines) by a task per file, so line numbers in quarantine entries are exact while
workers seek straight to their rows.
"""

from __future__ import annotations

import io
import itertools
import json
import math
from collections.abc import Callable, Iterator
from functools import lru_cache

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from hades_ray.io.demo_corpus import DEMO_INPUT, read_demo_records
from hades_ray.io.lines import iter_raw_lines
from hades_ray.pipeline import storage
from hades_ray.pipeline.job import Mapper
from hades_ray.pipeline.shards import Shard
from hades_ray.text.seeding import stable_key
from hades_ray.text.segment import first_paragraph

SUFFIXES = (".jsonl", ".json", ".parquet")
MAX_LINE_BYTES = 4 * 1024 * 1024  # a longer JSONL line is quarantined unread: no first paragraph is that long
_CHUNK = 1024 * 1024
AUTO_INDEX_EVERY = 16  # JSONL offsets indexed every N lines when the shard size is computed from the rows
INPUT_SCHEMA = pa.schema(
    [("row", pa.int64())] + [(name, pa.string()) for name in ("doc_id", "title", "text", "source", "reject")]
)


class InputError(ValueError):
    """An input that cannot be planned (missing, unreadable, or without a text column)."""


def input_files(path: str) -> list[str]:
    """The files behind ``--input``: one file, or every .jsonl/.json/.parquet under a folder, sorted."""
    if str(path) == DEMO_INPUT:
        return []
    try:
        info = storage.file_info(path)
    except OSError as error:
        raise InputError(f"input {path}: cannot be read ({error})") from None
    if info.type == pafs.FileType.NotFound:
        raise InputError(f"input not found: {path}")
    if info.type == pafs.FileType.File:
        return [str(path)]
    files = storage.list_files(path, SUFFIXES)
    if not files:
        raise InputError(f"no .jsonl or .parquet files under {path}")
    return files


# ---- planning (driver, plus one indexing task per JSONL file) ---------------------------------------


def file_identity(path: str) -> str:
    """A file's size and modification time: part of a shard's fingerprint, so a changed file makes it stale."""
    info = storage.file_info(path)
    return f"{info.size}:{info.mtime_ns or 0}"


def index_jsonl(path: str, every: int) -> tuple[int, list[int]]:
    """(number of lines, byte offset of line 0, every, 2*every, ...), streamed in bounded memory."""
    fs, inner = storage.resolve(path)
    offsets, lines, position, last_byte = [0], 0, 0, b"\n"
    with fs.open_input_stream(inner) as handle:
        while chunk := handle.read(_CHUNK):
            start = 0
            while (newline := chunk.find(b"\n", start)) >= 0:
                lines += 1
                if lines % every == 0:
                    offsets.append(position + newline + 1)
                start = newline + 1
            position += len(chunk)
            last_byte = chunk[-1:]
    if last_byte != b"\n":
        lines += 1  # a last line without a newline
    if offsets[-1] >= position and len(offsets) > 1:
        offsets.pop()  # the file ends exactly on a boundary
    return lines, offsets


def _parquet_rows(path: str) -> int:
    fs, inner = storage.resolve(path)
    try:
        with fs.open_input_file(inner) as handle:
            parquet = pq.ParquetFile(handle)
            schema, rows = parquet.schema_arrow, parquet.metadata.num_rows
    except (pa.ArrowInvalid, OSError) as error:
        raise InputError(f"{path}: not a readable Parquet file ({error})") from None
    if "text" not in schema.names:
        raise InputError(f"{path}: Parquet input needs a 'text' column; it has {', '.join(schema.names)}")
    if not pa.types.is_string(schema.field("text").type) and not pa.types.is_large_string(schema.field("text").type):
        raise InputError(f"{path}: the 'text' column must hold strings, not {schema.field('text').type}")
    return rows


def plan_shards(
    path: str,
    shard_size: int | Callable[[int], int],
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    mapper: Mapper = None,
) -> list[Shard]:
    """Fixed row-range shards over the input (after ``limit`` rows; ``sample`` draws about N of them).
    ``shard_size`` is rows per shard, or a function of the rows to be read that gives it.

    With ``sample``, each row is kept with probability N / rows, seeded per (seed, file name, row), and
    shards widen by the same factor so each still holds about ``shard_size`` kept rows."""
    mapper = mapper or (lambda fn, items: [fn(i) for i in items])
    every = shard_size if isinstance(shard_size, int) else AUTO_INDEX_EVERY  # JSONL offsets kept every N lines
    if str(path) == DEMO_INPUT:
        sources = [(DEMO_INPUT, "demo", len(_demo_records()), [0], "")]
    else:
        sources = _file_sources(input_files(path), every, mapper)
    total = sum(rows for _, _, rows, _, _ in sources)
    total = min(total, limit) if limit is not None else total
    rate = 1.0 if not sample or sample >= total else sample / total
    size = shard_size if isinstance(shard_size, int) else shard_size(min(total, sample or total))
    span = size if rate >= 1.0 else math.ceil(size / rate)
    shards: list[Shard] = []
    remaining = total
    for source, fmt, rows, offsets, identity in sources:
        rows = min(rows, remaining)
        remaining -= rows
        for first in range(0, rows, span):
            indexed = first // every if fmt == "jsonl" else 0
            shards.append(
                Shard(
                    len(shards),
                    source,
                    fmt,
                    first,
                    min(first + span, rows),
                    byte_start=offsets[indexed],
                    offset_row=indexed * every,
                    identity=identity,
                    sample_rate=rate,
                    sample_seed=seed,
                )
            )
    return shards


def _file_sources(files: list[str], shard_size: int, mapper: Mapper) -> list[tuple]:
    jsonl = [f for f in files if not f.endswith(".parquet")]
    indexes = dict(zip(jsonl, mapper(lambda f: index_jsonl(f, shard_size), jsonl)))
    sources = []
    for path in files:
        if path.endswith(".parquet"):
            sources.append((path, "parquet", _parquet_rows(path), [0], file_identity(path)))
        else:
            lines, offsets = indexes[path]
            sources.append((path, "jsonl", lines, offsets, file_identity(path)))
    return sources


# ---- reading one shard (worker) ---------------------------------------------------------------------


def _kept(shard: Shard, row: int) -> bool:
    if shard.sample_rate >= 1.0:
        return True
    name = shard.source.rsplit("/", 1)[-1]
    return stable_key(f"{shard.sample_seed}\x00{name}\x00{row}") / 2**64 < shard.sample_rate


def read_shard(shard: Shard) -> pa.Table:
    """The shard's rows (kept by the sample), sorted by text length so model batches pad little."""
    readers = {"jsonl": _jsonl_records, "parquet": _parquet_records, "demo": _demo_rows}
    rows = [r for r in readers[shard.fmt](shard) if _kept(shard, r["row"])]
    rows.sort(key=lambda r: (len(r["text"]), r["row"]))
    return pa.Table.from_pylist(rows, schema=INPUT_SCHEMA)


def _row(row: int, doc_id: str, source: str, title: str = "", text: str = "", reject: str = "") -> dict:
    return {"row": row, "doc_id": doc_id, "title": title, "text": text, "source": source, "reject": reject}


def record_row(record: object, row: int, source: str, fallback_id: str, reject: str = "") -> dict:
    """One input record as a row: its first paragraph, or the reason it cannot be used (``reject`` when
    the record could not be read)."""
    if reject or not isinstance(record, dict):
        return _row(row, fallback_id, source, reject=reject or "not_an_object")
    doc_id = record.get("id", record.get("wikidata_id", fallback_id))
    doc_id = str(doc_id) if isinstance(doc_id, (str, int)) and doc_id != "" else fallback_id
    title = record.get("title") if isinstance(record.get("title"), str) else ""
    text = record.get("text")
    if text is None:
        return _row(row, doc_id, source, title, reject="missing_text")
    if not isinstance(text, str):
        return _row(row, doc_id, source, title, reject="text_not_a_string")
    return _row(row, doc_id, source, title, first_paragraph(text))


def shard_lines(shard: Shard) -> Iterator[tuple[int, bytes | None, str, str]]:
    """``(row, raw line without its newline, "file:line", "name:line")`` for each non-blank line of a
    line-based shard; the raw line is None when it is over ``MAX_LINE_BYTES`` (skipped unread)."""
    fs, inner = storage.resolve(shard.source)
    name = shard.source.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    with fs.open_input_file(inner) as handle:
        handle.seek(shard.byte_start)
        lines = iter_raw_lines(io.BufferedReader(handle, _CHUNK), MAX_LINE_BYTES)
        for number, raw in itertools.islice(lines, shard.end_row - shard.offset_row):
            row = shard.offset_row + number - 1
            if row < shard.first_row or (raw is not None and not raw.strip()):
                continue  # lines before the shard (skipped to from the index), and blank lines
            line = None if raw is None else raw.removesuffix(b"\n")
            yield row, line, f"{shard.source}:{row + 1}", f"{name}:{row + 1}"


def _jsonl_records(shard: Shard) -> Iterator[dict]:
    for row, raw, source, fallback in shard_lines(shard):
        record, reject = decode_json_line(raw)
        yield record_row(record, row, source, fallback, reject)


def decode_line(raw: bytes | None) -> tuple[str | None, str]:
    """(the line's text, "") or (None, the reason it cannot be read: over-long or not UTF-8)."""
    if raw is None:
        return None, "line_too_long"
    try:
        return raw.decode("utf-8"), ""
    except UnicodeDecodeError:
        return None, "invalid_utf8"


def decode_json_line(raw: bytes | None) -> tuple[object, str]:
    """(the line's JSON value, "") or (None, why it is none: over-long, not UTF-8, not JSON, too deep)."""
    line, reject = decode_line(raw)
    if reject:
        return None, reject
    try:
        return json.loads(line), ""
    except RecursionError:
        return None, "nested_too_deep"
    except ValueError:
        return None, "invalid_json"


RowMaker = Callable[[object, int, str, str, str], dict]  # (record, row, source, fallback id, reject) -> row


def parquet_rows(shard: Shard, wanted: tuple[str, ...], make_row: RowMaker) -> Iterator[dict]:
    """One row per Parquet row of the shard, made by ``make_row`` from the ``wanted`` columns it has; a
    row group that cannot be read gives its rows with an ``unreadable_parquet`` reason."""
    fs, inner = storage.resolve(shard.source)
    name = shard.source.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    with fs.open_input_file(inner) as handle:
        parquet = pq.ParquetFile(handle)
        columns = [c for c in wanted if c in parquet.schema_arrow.names]
        group_start = 0
        for group in range(parquet.num_row_groups):
            size = parquet.metadata.row_group(group).num_rows
            lo, hi = max(shard.first_row, group_start), min(shard.end_row, group_start + size)
            if lo < hi:
                try:
                    table = parquet.read_row_group(group, columns=columns).slice(lo - group_start, hi - lo)
                    records, reason = table.to_pylist(), ""
                except (pa.ArrowException, OSError) as error:
                    records, reason = [None] * (hi - lo), f"unreadable_parquet: {type(error).__name__}"
                for row, record in enumerate(records, start=lo):
                    yield make_row(record, row, f"{shard.source}:row {row + 1}", f"{name}:{row + 1}", reason)
            group_start += size


def _parquet_records(shard: Shard) -> Iterator[dict]:
    return parquet_rows(shard, ("id", "wikidata_id", "title", "text"), record_row)


_demo_records = lru_cache(maxsize=1)(read_demo_records)


def _demo_rows(shard: Shard) -> Iterator[dict]:
    records = _demo_records()
    for row in range(shard.first_row, shard.end_row):
        yield record_row(records[row], row, f"demo:{row + 1}", f"demo:{row + 1}")
