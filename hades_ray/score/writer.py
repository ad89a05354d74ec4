"""Shard outputs of the score job (written by workers) and their merge (the driver).

Per shard ``part-NNNNN``: ``scores/`` (one JSON line per text: its scored words with character
offsets, p(H) and the flag), ``quarantine/`` (rejected rows with their reason), then ``markers/``
with the counts. The driver streams the parts into ``scores.jsonl`` and ``quarantine.jsonl`` and sums
the markers into ``summary.json``; it never holds more than one line of a part.
"""

from __future__ import annotations

import json
import time
from collections import Counter

import pyarrow as pa

from hades_ray.pipeline import storage
from hades_ray.pipeline.shards import part_name, read_markers, write_marker
from hades_ray.score.inputs import EMPTY_SHARD_ROW


def text_record(row: dict, threshold: float) -> dict:
    """One scored text: ``{"id", "source", "text", "words": [{"word", "start", "end", "p", "flag"}], ...}``."""
    text, starts, ends = row["text"], row["word_start"], row["word_end"]
    words = []
    for first, last, p in zip(row["target_first"], row["target_last"], row["p"]):
        start, end = starts[first], ends[last]
        words.append({"word": text[start:end], "start": start, "end": end, "p": p, "flag": p >= threshold})
    return {
        "id": row["id"],
        "source": row["source"],
        "text": text,
        "threshold": threshold,
        "words": words,
        "n_words": len(words),
        "n_flagged": sum(w["flag"] for w in words),
        "max_p": max((w["p"] for w in words), default=None),
    }


def _jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def write_score_shards(table: pa.Table, output: str, threshold: float) -> pa.Table:
    """Write every shard in ``table`` (one per block); returns one small stats row per shard."""
    by_shard: dict[int, list[dict]] = {}
    for row in table.to_pylist():
        by_shard.setdefault(int(row["shard"]), []).append(row)
    stats = [_write_one(shard, rows, output, threshold) for shard, rows in sorted(by_shard.items())]
    return pa.table({"shard": [s["shard"] for s in stats], "marker": [json.dumps(s) for s in stats]})


def _write_one(shard: int, rows: list[dict], output: str, threshold: float) -> dict:
    fingerprint = rows[0]["fingerprint"]  # the reader stamps every row of its shard
    rows = sorted((r for r in rows if r["row"] != EMPTY_SHARD_ROW), key=lambda r: r["row"])
    scored = [text_record(r, threshold) for r in rows if not r["reject"]]
    quarantine = [{"source": r["source"], "id": r["id"], "reason": r["reject"]} for r in rows if r["reject"]]
    name = part_name(shard)
    storage.write_text(storage.join(output, "scores", f"{name}.jsonl"), _jsonl(scored))
    storage.write_text(storage.join(output, "quarantine", f"{name}.jsonl"), _jsonl(quarantine))
    p = [w["p"] for r in scored for w in r["words"]]
    stats = {
        "shard": shard,
        "fingerprint": fingerprint,
        "counts": {
            "rows": len(rows),
            "scored_texts": len(scored),
            "quarantined": len(quarantine),
            "scored_words": len(p),
            "flagged": sum(x >= threshold for x in p),
        },
        "p_sum": float(sum(p)),
        "reasons": dict(Counter(q["reason"].split(" ", 1)[0] for q in quarantine)),
        "stage_seconds": {k.removeprefix("seconds_"): round(sum(r[k] for r in rows), 4) for k in _timings(rows)},
        "finished_at": time.time(),
    }
    write_marker(output, shard, stats)  # last: a shard with a marker is whole
    return stats


def _timings(rows: list[dict]) -> list[str]:
    return sorted(k for k in (rows[0] if rows else {}) if k.startswith("seconds_"))


def merge_outputs(output: str, shards: list[int]) -> dict:
    """Stream the shards' parts into ``scores.jsonl`` and ``quarantine.jsonl``; sum their markers."""
    names = [part_name(k) for k in shards]
    storage.concatenate(
        [storage.join(output, "scores", f"{n}.jsonl") for n in names], storage.join(output, "scores.jsonl")
    )
    storage.concatenate(
        [storage.join(output, "quarantine", f"{n}.jsonl") for n in names], storage.join(output, "quarantine.jsonl")
    )
    markers = read_markers(output)
    counts, reasons, seconds, p_sum = Counter(), Counter(), Counter(), 0.0
    for k in shards:
        counts.update(markers[k]["counts"])
        reasons.update(markers[k]["reasons"])
        seconds.update(markers[k]["stage_seconds"])
        p_sum += markers[k]["p_sum"]
    return {
        **dict(counts),
        "quarantine_reasons": dict(sorted(reasons.items())),
        "mean_p": p_sum / counts["scored_words"] if counts["scored_words"] else None,
        "flagged_share": counts["flagged"] / counts["scored_words"] if counts["scored_words"] else None,
        "stage_seconds": {k: round(v, 3) for k, v in sorted(seconds.items())},
    }
