"""The score job's shard writer: per shard ``part-NNNNN``, ``scores/`` (one JSON line per text: its
scored words with character offsets, p(H) and the flag) and ``quarantine/`` (rejected rows with their
reason)."""

from __future__ import annotations

import json
from collections import Counter

import pyarrow as pa

from hades_ray.pipeline import storage
from hades_ray.pipeline.shards import part_name
from hades_ray.score.word_record import word_record
from hades_ray.text.languages import Language
from hades_ray.text.languages import language as find_language


def text_record(row: dict, threshold: float, language: Language) -> dict:
    """One scored text: ``{"id", "source", "text", "words": [{"word", "start", "end", "p", "flag"}], ...}``
    (each word ``word_record``'s), and ``language`` when it is not English (the row's own, a service
    request's, else ``language``)."""
    text, starts, ends = row["text"], row["word_start"], row["word_end"]
    words = []
    for first, last, p in zip(row["target_first"], row["target_last"], row["p"]):
        start, end = starts[first], ends[last]
        words.append(word_record(text[start:end], start, end, p, threshold))
    language = find_language(row["language"]) if row.get("language") else language
    return {
        "id": row["id"],
        "source": row["source"],
        **language.record_fields(),  # English lines keep their bytes
        "text": text,
        "threshold": threshold,
        "words": words,
        "n_words": len(words),
        "n_flagged": sum(w["flag"] for w in words),
        "max_p": max((w["p"] for w in words), default=None),
    }


def _jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def write_shard(index: int, table: pa.Table, output: str, threshold: float, language: Language) -> dict:
    """Write shard ``index``'s parts (texts in input order); returns its stats for ``summary.json``."""
    rows = sorted(table.to_pylist(), key=lambda r: r["row"])
    scored = [text_record(r, threshold, language) for r in rows if not r["reject"]]
    quarantine = [{"source": r["source"], "id": r["id"], "reason": r["reject"]} for r in rows if r["reject"]]
    name = part_name(index)
    storage.write(storage.join(output, "scores", f"{name}.jsonl"), _jsonl(scored))
    storage.write(storage.join(output, "quarantine", f"{name}.jsonl"), _jsonl(quarantine))
    p = [w["p"] for r in scored for w in r["words"]]
    counts = {"rows": len(rows), "scored_texts": len(scored), "quarantined": len(quarantine)}
    counts |= {"scored_words": len(p), "flagged": sum(x >= threshold for x in p)}
    reasons = Counter(q["reason"].split(" ", 1)[0] for q in quarantine)
    return {"counts": counts, "p_sum": float(sum(p)), "reasons": dict(reasons)}
