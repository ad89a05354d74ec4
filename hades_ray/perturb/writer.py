"""The perturbation job's shard writer. Files of shard k (all keyed by ``part-0000k``): ``pool/`` (Parquet,
one row per perturbed document with every candidate's perplexity), ``instances/`` (HaDes instances as
Parquet for the selection job and as JSONL in the published format) and ``quarantine/`` (JSONL: rows set
aside, with reason and source).
"""

from __future__ import annotations

import io
import json
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq

from hades_ray.perturb.artifacts import count_artifacts
from hades_ray.perturb.rank import most_fluent
from hades_ray.perturb.spans import hades_instances, words_with_span_indices
from hades_ray.pipeline import storage
from hades_ray.pipeline.shards import part_name
from hades_ray.workdir import INSTANCE_SCHEMA, POOL_SCHEMA

QUARANTINE_KEEPS = ("too_short", "no_maskable_words")  # normal filtering: counted, not quarantined


def write_shard(index: int, table: pa.Table, output: str, lowercase: bool) -> dict:
    """Write shard ``index``'s files (the executor writes its marker after them); returns its stats."""
    rows = sorted(table.to_pylist(), key=lambda r: r["row"])
    pool, instances, quarantine, counts = shard_outputs(index, rows, lowercase)
    name = part_name(index)
    storage.write(storage.join(output, "pool", f"{name}.parquet"), _parquet(pool, POOL_SCHEMA))
    columns = [c for _, c in instances]
    storage.write(storage.join(output, "instances", f"{name}.parquet"), _parquet(columns, INSTANCE_SCHEMA))
    storage.write(storage.join(output, "instances", f"{name}.jsonl"), _jsonl([r for r, _ in instances]))
    storage.write(storage.join(output, "quarantine", f"{name}.jsonl"), _jsonl(quarantine))
    return {"counts": dict(counts), "artifacts": dict(count_artifacts(pool))}


def shard_outputs(shard: int, rows: list[dict], lowercase: bool) -> tuple[list, list, list, Counter]:
    """(pool rows, HaDes instances, quarantine entries, counts) of one shard's rows, in row order."""
    pool, instances, quarantine, counts = [], [], [], Counter(read=len(rows))
    for row in rows:
        status = row["status"]
        if status != "ok":
            counts[status] += 1
            if status not in QUARANTINE_KEEPS:
                counts["quarantined"] += 1
                quarantine.append(_quarantine_entry(row, status))
            continue
        best = most_fluent(row["cand_ppls"])
        spans = row["cand_spans"][best]
        pool.append(
            {
                "doc_id": row["doc_id"],
                "title": row["title"],
                "original": row["text"],
                "perturbed": row["cand_texts"][best],
                "ppl": row["cand_ppls"][best],
                "candidate": best,
                "candidate_ppls": row["cand_ppls"],
                "spans": spans,
                "shard": shard,
                "row": row["row"],
            }
        )
        made = hades_instances(row["doc_id"], row["cand_texts"][best], spans, lowercase)
        columns = instance_rows(row["doc_id"], row["cand_texts"][best], spans, lowercase)
        instances.extend(zip(made, columns))
        counts.update(kept=1, perturbed=1, instances=len(made))
    return pool, instances, quarantine, counts


def _quarantine_entry(row: dict, reason: str) -> dict:
    return {"doc_id": row["doc_id"], "source": row["source"], "reason": reason, "text_head": (row["text"] or "")[:200]}


def instance_rows(doc_id: str, perturbed: str, spans: list[dict], lowercase: bool) -> list[dict]:
    """The same instances as ``hades_instances``, as columns: the words, and the span's word range."""
    words, ranges = words_with_span_indices(perturbed, spans)
    words = [w.lower() for w in words] if lowercase else words
    return [
        {
            "id": f"{doc_id}#{index}",
            "doc_id": doc_id,
            "words": words,
            "start": first,
            "end": last,
            "replacement": span["replacement"],
            "original_span": span["original"],
            "ner": span["ner"],
            "pos": span["pos"],
            "hallucination": -1,
        }
        for index, (span, (first, last)) in enumerate(zip(spans, ranges))
        if last >= first  # a replacement with no word characters cannot be a target span
    ]


def _parquet(rows: list[dict], schema: pa.Schema) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), buffer)
    return buffer.getvalue()


def _jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
