"""The perturbation job's shard writer. Files of shard k (all keyed by ``part-0000k``): ``pool/`` (Parquet,
one row per perturbed document with every candidate's perplexity), ``instances/`` (HaDes instances as
Parquet for the selection job and as JSONL in the published format) and ``quarantine/`` (JSONL: rows set
aside, with reason and source).
"""

from __future__ import annotations

import json
from collections import Counter

import pyarrow as pa

from hades_ray.perturb.artifacts import count_artifacts
from hades_ray.perturb.rank import most_fluent
from hades_ray.perturb.spans import hades_record, instance_rows
from hades_ray.pipeline import storage
from hades_ray.pipeline.shards import part_name
from hades_ray.text.languages import Language
from hades_ray.pool.schemas import INSTANCE_SCHEMA, POOL_SCHEMA

QUARANTINE_KEEPS = ("too_short", "no_maskable_words")  # normal filtering: counted, not quarantined


def write_shard(index: int, table: pa.Table, output: str, lowercase: bool, language: Language) -> dict:
    """Write shard ``index``'s files (the executor writes its marker after them); returns its stats."""
    rows = sorted(table.to_pylist(), key=lambda r: r["row"])
    pool, instances, quarantine, counts = shard_outputs(index, rows, lowercase, language)
    name = part_name(index)
    storage.write_table(storage.join(output, "pool", f"{name}.parquet"), pa.Table.from_pylist(pool, schema=POOL_SCHEMA))
    instance_table = pa.Table.from_pylist(instances, schema=INSTANCE_SCHEMA)
    storage.write_table(storage.join(output, "instances", f"{name}.parquet"), instance_table)
    records = (hades_record(instance, language) for instance in instances)
    storage.write(storage.join(output, "instances", f"{name}.jsonl"), _jsonl(records))
    storage.write(storage.join(output, "quarantine", f"{name}.jsonl"), _jsonl(quarantine))
    return {"counts": dict(counts), "artifacts": dict(count_artifacts(pool, language))}


def shard_outputs(
    shard: int, rows: list[dict], lowercase: bool, language: Language
) -> tuple[list, list, list, Counter]:
    """(pool rows, instance rows, quarantine entries, counts) of one shard's rows, in row order."""
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
        made = instance_rows(row["doc_id"], row["cand_texts"][best], spans, lowercase, language=language)
        instances += made
        counts.update(kept=1, perturbed=1, instances=len(made))
    return pool, instances, quarantine, counts


def _quarantine_entry(row: dict, reason: str) -> dict:
    return {"doc_id": row["doc_id"], "source": row["source"], "reason": reason, "text_head": (row["text"] or "")[:200]}


def _jsonl(records) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
