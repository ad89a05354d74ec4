"""Texts to score: JSONL (``{"id", "text"}`` per line), plain text (one text per line), Parquet with a
``text`` column, a folder of those, stdin, or one text given on the command line.

Files are planned into shards as the perturbation job plans them (``hades_ray/io/readers.py``), and a
worker reads its shard. Every row comes out exactly once: as a text, or with a ``reject`` reason that
lands in the quarantine (invalid JSON or UTF-8, no or a non-string ``text``, an empty or over-long
text). Unlike perturbation, the whole text is scored, not its first paragraph.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys

import pyarrow as pa

from hades_ray.io.readers import InputError, decode_json_line, decode_line, parquet_rows, plan_shards, shard_lines
from hades_ray.pipeline.shards import Shard
from hades_ray.score.settings import MAX_CHARS

TEXT_SCHEMA = pa.schema(
    [
        ("row", pa.int64()),
        ("id", pa.string()),
        ("text", pa.string()),
        ("source", pa.string()),
        ("reject", pa.string()),
    ]
)


def plan_inputs(path: str, shard_size: int, mapper=None) -> list[Shard]:
    """Shards over ``path``; a ``.txt`` file is read line by line as plain text."""
    if str(path) == "demo":
        raise InputError("score reads your texts: give a .jsonl, .txt or .parquet file, a folder, or - for stdin")
    shards = plan_shards(path, shard_size, mapper=mapper)
    return [dataclasses.replace(s, fmt="txt") if s.source.endswith(".txt") else s for s in shards]


def memory_input(text: str | None, max_chars: int = MAX_CHARS) -> tuple[Shard, pa.Table]:
    """``--text``, or stdin's non-blank lines when ``text`` is None, as one in-memory shard and its rows.
    The shard's identity is its rows' digest: a rerun with other texts finds the finished shard stale."""
    if text is not None:
        table = memory_table([text], "text", max_chars)
    else:  # bytes: a line that is not UTF-8 is quarantined, not a crash
        lines = [line.rstrip(b"\r") for line in sys.stdin.buffer.read().splitlines() if line.strip()]
        table = memory_table(lines, "stdin", max_chars)
    identity = hashlib.sha256(json.dumps(table.to_pydict(), ensure_ascii=False).encode()).hexdigest()
    return Shard(0, "memory", "memory", 0, table.num_rows, identity=identity), table


def memory_table(texts: list[str | bytes], source: str, max_chars: int = MAX_CHARS) -> pa.Table:
    """One in-memory shard of texts (stdin lines as bytes, or ``--text``), checked like a file's rows."""
    rows = []
    for row, text in enumerate(texts):
        where = f"{source}:{row + 1}"
        if isinstance(text, bytes):
            rows.append(_parse_line(text, row, where, where, "txt", max_chars))
        else:
            rows.append(_text_row(text, row, where, where, max_chars))
    return pa.Table.from_pylist(rows, schema=TEXT_SCHEMA)


def read_texts(shard: Shard, max_chars: int = MAX_CHARS) -> pa.Table:
    """The shard's rows in input order, each a text or a reject reason (none: the executor's placeholder)."""
    if shard.fmt == "parquet":
        rows = list(_parquet_rows(shard, max_chars))
    else:
        rows = list(_line_rows(shard, max_chars))
    return pa.Table.from_pylist(rows, schema=TEXT_SCHEMA)


def _row(row: int, text_id: str, source: str, text: str = "", reject: str = "") -> dict:
    return {"row": row, "id": text_id, "text": text, "source": source, "reject": reject}


def _text_row(value: object, row: int, source: str, text_id: str, max_chars: int | None) -> dict:
    if value is None:
        return _row(row, text_id, source, reject="missing_text")
    if not isinstance(value, str):
        return _row(row, text_id, source, reject="text_not_a_string")
    if not value.strip():
        return _row(row, text_id, source, reject="empty_text")
    if max_chars is not None and len(value) > max_chars:
        return _row(row, text_id, source, reject=f"text_too_long (over {max_chars} characters)")
    return _row(row, text_id, source, value)


def _record_row(record: object, row: int, source: str, fallback: str, max_chars: int) -> dict:
    if not isinstance(record, dict):
        return _row(row, fallback, source, reject="not_an_object")
    text_id = record.get("id", fallback)
    text_id = str(text_id) if isinstance(text_id, (str, int)) and text_id != "" else fallback
    return _text_row(record.get("text"), row, source, text_id, max_chars)


def _line_rows(shard: Shard, max_chars: int):
    for row, raw, source, fallback in shard_lines(shard):
        yield _parse_line(raw, row, source, fallback, shard.fmt, max_chars)


def _parse_line(raw: bytes | None, row: int, source: str, fallback: str, fmt: str, max_chars: int) -> dict:
    if fmt == "txt":
        line, reject = decode_line(raw)
        return (
            _row(row, fallback, source, reject=reject)
            if reject
            else _text_row(line.rstrip("\r"), row, source, fallback, max_chars)
        )
    record, reject = decode_json_line(raw)
    return (
        _row(row, fallback, source, reject=reject) if reject else _record_row(record, row, source, fallback, max_chars)
    )


def _parquet_rows(shard: Shard, max_chars: int):
    def make_row(record: object, row: int, source: str, fallback: str, reject: str) -> dict:
        return (
            _row(row, fallback, source, reject=reject)
            if reject
            else _record_row(record, row, source, fallback, max_chars)
        )

    return parquet_rows(shard, ("id", "text"), make_row)
