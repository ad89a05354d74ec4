"""The generation job's shard writer, run on a worker: the shard's generations, interventions and
quarantine entries (each file atomic, keyed ``part-NNNNN``), then its marker with the shard's counts.

A generation record holds ``text`` (prompt + generation) and ``words``: every word the guard judged,
with its characters in ``text``, p(H) and flag, the layout ``hades-ray score`` writes. An intervention's
``char_start``/``char_end`` are where its replacement stands in ``text``.
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict

import pyarrow as pa

from hades_ray.pipeline import storage
from hades_ray.pipeline.shards import part_name, write_marker

EMPTY_SHARD_ROW = -1


class IncompleteShardError(RuntimeError):
    """A shard reached the writer without all of its rows."""


def write_generation_shards(table: pa.Table, output: str, config_digest: str, threshold: float | None) -> pa.Table:
    """Write every shard in ``table``; returns one stats row per shard (all the driver receives)."""
    by_shard: dict[int, list[dict]] = defaultdict(list)
    for row in table.to_pylist():
        by_shard[int(row["shard"])].append(row)
    stats = [_write_one(k, rows, output, config_digest, threshold) for k, rows in sorted(by_shard.items())]
    return pa.table({"shard": [s["shard"] for s in stats], "marker": [json.dumps(s) for s in stats]})


def generation_record(row: dict, threshold: float | None) -> dict:
    offset = len(row["prompt"])
    words = [
        {"word": w["word"], "start": offset + w["start"], "end": offset + w["end"], "p": w["p"]}
        | {"flag": threshold is not None and w["p"] >= threshold}
        for w in json.loads(row["scores"])
    ]
    record = {"id": row["id"], "prompt": row["prompt"], "generation": row["generation"]}
    record |= {"text": row["prompt"] + row["generation"], "new_tokens": row["new_tokens"], "words": words}
    record["token_ids"] = row["token_ids"]
    record |= {"interventions": len(json.loads(row["interventions"])), "emitted_flagged": row["emitted_flagged"]}
    return record | {"threshold": threshold, "batch": json.loads(row["batch"]), "row": row["row"]}


def shard_outputs(rows: list[dict], threshold: float | None) -> tuple[list, list, list, Counter]:
    """(generation records, intervention records, quarantine entries, counts), in input-line order."""
    generations, interventions, quarantine = [], [], []
    counts: Counter = Counter(read=len(rows))
    for row in rows:
        if row["status"] != "ok":
            counts.update(quarantined=1, **{row["status"]: 1})
            quarantine.append(
                {"id": row["id"], "source": row["source"], "reason": row["status"], "prompt_head": row["prompt"][:200]}
            )
            continue
        record = generation_record(row, threshold)
        generations.append(record)
        offset = len(row["prompt"])
        events = [
            {"id": row["id"], **e, "char_start": offset + e["char_start"], "char_end": offset + e["char_end"]}
            for e in json.loads(row["interventions"])
        ]
        interventions += events
        counts.update(generated=1, new_tokens=row["new_tokens"], interventions=len(events))
        counts.update(judged_words=len(record["words"]), emitted_flagged=row["emitted_flagged"])
        counts.update(flagged_words=sum(w["flag"] for w in record["words"]))
    return generations, interventions, quarantine, counts


def _write_one(shard: int, rows: list[dict], output: str, config_digest: str, threshold: float | None) -> dict:
    real = sorted((r for r in rows if r["row"] != EMPTY_SHARD_ROW), key=lambda r: r["row"])
    expected = int(rows[0]["shard_rows"])
    if len(real) != expected:
        raise IncompleteShardError(f"shard {shard}: {len(real)} of {expected} rows reached the writer")
    generations, interventions, quarantine, counts = shard_outputs(real, threshold)
    name = part_name(shard)
    for folder, records in (("generations", generations), ("interventions", interventions), ("quarantine", quarantine)):
        storage.write_text(storage.join(output, folder, f"{name}.jsonl"), _jsonl(records))
    seconds = sum(float(r.get("seconds_generate") or 0.0) for r in rows)
    stats = {"shard": shard, "fingerprint": rows[0]["fingerprint"], "config_digest": config_digest}
    stats |= {"counts": dict(counts), "generate_seconds": round(seconds, 4), "finished_at": time.time()}
    write_marker(output, shard, stats)  # last: a shard with a marker is whole
    return stats


def _jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
