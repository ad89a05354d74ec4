"""The generation job's shard writer: generations, interventions and quarantine entries. A generation
record holds ``text`` (prompt + generation) and ``words``: every word the guard judged, with its
characters in ``text``, p(H) and flag, the layout ``hades-ray score`` writes. An intervention's
``char_start``/``char_end`` are where its replacement stands in ``text``.
"""

from __future__ import annotations

import json
from collections import Counter

import pyarrow as pa

from hades_ray.pipeline import storage
from hades_ray.pipeline.shards import part_name
from hades_ray.score.word_record import word_record

VIEWS = ("generations", "interventions", "quarantine")


def write_shard(index: int, table: pa.Table, output: str, threshold: float | None) -> dict:
    """Write shard ``index``'s parts (in input-line order); returns its counts for ``summary.json``."""
    rows = sorted(table.to_pylist(), key=lambda r: r["row"])
    generations, interventions, quarantine, counts = shard_outputs(rows, threshold)
    for folder, records in zip(VIEWS, (generations, interventions, quarantine)):
        storage.write(storage.join(output, folder, f"{part_name(index)}.jsonl"), _jsonl(records))
    return {"counts": dict(counts)}


def generation_record(row: dict, threshold: float | None) -> dict:
    offset = len(row["prompt"])
    words = [
        word_record(w["word"], offset + w["start"], offset + w["end"], w["p"], threshold)
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


def _jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
