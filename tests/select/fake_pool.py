"""Test helpers (no tests here): a synthetic pool in the perturbation job's layout."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from hades_ray.pipeline.shards import part_name, write_marker
from hades_ray.pipeline.storage import write_table
from hades_ray.pool.schemas import INSTANCE_SCHEMA

SWAPS = [  # (original, replacement): dates, names, paraphrases, unrelated words, same lemma
    ("1932", "1954"),
    ("March", "June"),
    ("Smith", "Jones"),
    ("Anna", "Maria"),
    ("large", "big"),
    ("city", "town"),
    ("river", "banana"),
    ("physicist", "footballer"),
    ("wrote", "writes"),
    ("London", "Paris"),
    ("novel", "sandwich"),
    ("famous", "well-known"),
]


def pool_rows(n_docs: int, first_doc: int = 0) -> list[dict]:
    """One instance per (document, swap), in the perturbation job's instance columns."""
    rows = []
    for d in range(first_doc, first_doc + n_docs):
        for s, (orig, repl) in enumerate(SWAPS):
            words = (
                f"Doc {d} : Anna Smith was born in March 1932 in London , a large city by the river ."
                f" She wrote a famous novel and became a physicist <{repl}> & more ."
            ).split()
            i = words.index(f"<{repl}>")
            words[i] = repl
            rows.append(
                {
                    "id": f"d{d}-s{s}",
                    "doc_id": f"d{d}",
                    "words": words,
                    "start": i,
                    "end": i,
                    "replacement": repl,
                    "original_span": orig,
                    "ner": "",
                    "pos": "",
                    "hallucination": -1,
                }
            )
    return rows


def build_pool(directory: Path, n_docs: int = 12, docs_per_shard: int = 4, unfinished: bool = True) -> Path:
    """``directory/instances/part-NNNNN.parquet`` + ``_markers/`` per shard of ``docs_per_shard`` documents.

    With ``unfinished``, one more shard has its instances but no marker (a crashed worker), and the
    merged ``instances.jsonl`` holds an extra line: selection must read neither."""
    directory.mkdir(parents=True, exist_ok=True)
    shards = [(k, min(docs_per_shard, n_docs - first)) for k, first in enumerate(range(0, n_docs, docs_per_shard))]
    for index, count in shards:
        rows = pool_rows(count, index * docs_per_shard)
        write_table(
            str(directory / "instances" / f"{part_name(index)}.parquet"), pa.Table.from_pylist(rows, INSTANCE_SCHEMA)
        )
        counts = {"read": count, "kept": count, "instances": len(rows)}
        write_marker(str(directory), index, {"shard": index, "counts": counts, "fingerprint": f"fp{index}"})
    if unfinished:
        rows = pool_rows(2, 10_000)
        path = directory / "instances" / f"{part_name(len(shards))}.parquet"
        write_table(str(path), pa.Table.from_pylist(rows, INSTANCE_SCHEMA))
        (directory / "instances.jsonl").write_text(
            json.dumps({"id": "stray", "replaced": "a ===b===", "replaced_ids": [1, 1]}) + "\n"
        )
    return directory


def add_empty_shard(directory: Path, index: int) -> None:
    """A finished pool shard without instances (every lead of it was quarantined, say)."""
    write_table(str(directory / "instances" / f"{part_name(index)}.parquet"), INSTANCE_SCHEMA.empty_table())
    write_marker(str(directory), index, {"shard": index, "counts": {"read": 1, "instances": 0}, "fingerprint": "e"})
