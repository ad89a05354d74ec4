"""Input readers: JSONL, Parquet, Wiki-40B Parquet and the embedded demo corpus, as one row stream.

Every input row comes out exactly once, either as a document or with a ``reject`` reason, so that a
shard is complete when all of its rows reach the writer and nothing is dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hades_ray.io.demo_corpus import DEMO_INPUT, read_demo_records
from hades_ray.perturb.segment import first_paragraph

WIKI40B_MARKERS = ("_START_ARTICLE_", "_START_SECTION_", "_START_PARAGRAPH_")


@dataclass
class InputRow:
    doc_id: str
    title: str
    text: str
    source: str  # "file:line" (or file:row for Parquet), for error messages and quarantine
    reject: str = ""  # a reason when the row cannot be used at all


def input_files(path: str | Path) -> list[Path]:
    """The files behind ``--input``: one file, or every .jsonl/.json/.parquet under a folder, sorted."""
    if str(path) == DEMO_INPUT:
        return []
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"input not found: {path}")
    if path.is_file():
        return [path]
    files = sorted(p for p in path.rglob("*") if p.suffix in (".jsonl", ".json", ".parquet") and p.is_file())
    if not files:
        raise FileNotFoundError(f"no .jsonl or .parquet files under {path}")
    return files


def _record_row(record: object, source: str, fallback_id: str) -> InputRow:
    if not isinstance(record, dict):
        return InputRow(fallback_id, "", "", source, "not_an_object")
    doc_id = record.get("id", record.get("wikidata_id", fallback_id))
    doc_id = str(doc_id) if doc_id not in (None, "") else fallback_id
    title = record.get("title") if isinstance(record.get("title"), str) else ""
    text = record.get("text")
    if text is None:
        return InputRow(doc_id, title, "", source, "missing_text")
    if not isinstance(text, str):
        return InputRow(doc_id, title, "", source, "text_not_a_string")
    return InputRow(doc_id, title, first_paragraph(text), source)


def _read_jsonl(path: Path) -> Iterator[InputRow]:
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            source, fallback = f"{path}:{number}", f"{path.stem}:{number}"
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                yield InputRow(fallback, "", "", source, "invalid_utf8")
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                yield InputRow(fallback, "", "", source, "invalid_json")
                continue
            yield _record_row(record, source, fallback)


def _read_parquet(path: Path) -> Iterator[InputRow]:
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(path)
    if "text" not in parquet.schema_arrow.names:
        raise ValueError(f"{path}: Parquet input needs a 'text' column; it has {parquet.schema_arrow.names}")
    number = 0
    for batch in parquet.iter_batches(batch_size=1024):
        for record in batch.to_pylist():
            number += 1
            yield _record_row(record, f"{path}:row {number}", f"{path.stem}:{number}")


def _read_demo() -> Iterator[InputRow]:
    for number, record in enumerate(read_demo_records(), start=1):
        yield _record_row(record, f"demo:{number}", f"demo:{number}")


def read_rows(path: str | Path, limit: int | None = None) -> Iterator[InputRow]:
    """Every input row in a stable order (files sorted, rows in file order), at most ``limit``."""
    if str(path) == DEMO_INPUT:
        streams: Iterator[InputRow] = _read_demo()
    else:
        streams = (row for file in input_files(path) for row in _read_file(file))
    for count, row in enumerate(streams):
        if limit is not None and count >= limit:
            return
        yield row


def _read_file(path: Path) -> Iterator[InputRow]:
    if path.suffix == ".parquet":
        return _read_parquet(path)
    return _read_jsonl(path)
