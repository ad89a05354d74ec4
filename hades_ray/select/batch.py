"""The round's batch file: the chosen instances in HaDes format plus the original text judges see.

The selection pass returns only (sample key, id, shard) triples; here the driver reads the chosen rows
back from the few pool parts that hold them, filtered by id, so it never holds a whole pool shard's
selection, let alone the pool.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from hades_ray.io.hades_format import mark_span
from hades_ray.pipeline import storage
from hades_ray.pool.features import window_text
from hades_ray.pool.layout import pool_dir
from hades_ray.pool.readers import pool_documents, pool_shards, read_pool_part
from hades_ray.pool.records import original_span_words, original_words
from hades_ray.text.languages import Language


def hades_record(row, label: int, language: Language) -> dict:
    """A chosen row in the HaDes format; any language but English is named in a ``language`` field
    (``Language.record_fields``)."""
    return {
        "replaced": mark_span(list(row["words"]), row["start"], row["end"]),
        "replaced_ids": [int(row["start"]), int(row["end"])],
        "hallucination": int(label),
        "id": row["id"],
        "doc_id": row["doc_id"],
        "original_span": row["original_span"],
        "replacement": row["replacement"],
        **language.record_fields(),
    }


def display_original(row, documents: dict, language: Language) -> tuple[str, int, int]:
    """The original text judges see, and the original span's char offsets in it.

    The document's own original text where the pool's spans locate this replacement; else the
    instance's words with its span put back, joined as ``language`` is written."""
    doc = documents.get(row["doc_id"])
    if doc:
        for span in doc["spans"]:
            if span.get("original") == row["original_span"] and span.get("replacement") == row["replacement"]:
                return doc["original"], int(span["orig_start"]), int(span["orig_end"])
    words = original_words(row, language)
    if language.is_default:  # English batches keep the offsets they always had: the span's own text's length
        before = " ".join(words[: row["start"]])
        start = len(before) + (1 if before else 0)
        return " ".join(words), start, start + len(str(row["original_span"]))
    n_span = max(len(original_span_words(row, language)), 1)
    return window_text(words, row["start"], row["start"] + n_span - 1, len(words), language)


def chosen_rows(workdir, chosen: list[tuple[float, str, int]]) -> list[dict]:
    """The pool rows of the chosen (key, id, shard) triples, in pool order (shard, then row)."""
    by_shard: dict[int, set[str]] = defaultdict(set)
    for _, instance_id, shard in chosen:
        by_shard[shard].add(instance_id)
    shards = {s.index: s for s in pool_shards(pool_dir(workdir))}
    rows = []
    for index in sorted(by_shard):
        table = read_pool_part(shards[index])
        wanted = pc.is_in(table.column("id"), value_set=pa.array(sorted(by_shard[index]), pa.string()))
        rows += [{**row, "shard": index} for row in table.filter(wanted).to_pylist()]
    return rows


def write_batch(workdir, rows: list[dict], path: Path, language: Language) -> None:
    docs_by_shard: dict[int, set[str]] = defaultdict(set)
    for row in rows:
        docs_by_shard[row["shard"]].add(row["doc_id"])
    documents = pool_documents(workdir, docs_by_shard)
    with storage.open_atomic(path) as handle:
        for row in rows:
            text, start, end = display_original(row, documents, language)
            shown = {"original_text": text, "original_start": start, "original_end": end}
            record = {**hades_record(row, -1, language), **shown}
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
