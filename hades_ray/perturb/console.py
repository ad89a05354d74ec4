"""What ``hades-ray perturb`` prints when it ends: the summary table and a few perturbed examples, their
replaced spans marked."""

from __future__ import annotations

from pathlib import Path

from hades_ray.pipeline import storage
from hades_ray.pipeline.shards import finished_shards, part_name


def mark_replacements(text: str, spans: list[dict], left: str = "[[", right: str = "]]") -> str:
    """``text`` with each replaced span shown as ``[[replacement (was: original)]]``."""
    pieces, cursor = [], 0
    for span in spans:
        pieces += [text[cursor : span["start"]], f"{left}{span['replacement']} (was: {span['original']}){right}"]
        cursor = span["end"]
    return "".join(pieces + [text[cursor:]])


def _artifact_rows(artifacts: dict | None) -> list[tuple[str, object]]:
    """The artifact-rate row (hades_ray.perturb.artifacts), when the summary has one."""
    if not artifacts or artifacts.get("rate") is None:
        return []
    kinds = ", ".join(f"{kind} {n}" for kind, n in artifacts.get("by_kind", {}).items() if n)
    detail = f"{artifacts['with_artifacts']} of {artifacts['replacements']}" + (f": {kinds}" if kinds else "")
    return [("replacement artifact rate", f"{artifacts['rate']:.2%} ({detail})")]


def summary_table(summary: dict) -> str:
    text = f"{summary.get('language')} ({summary.get('words')}; {summary.get('entities')})"
    rows = [
        *([("language (words; entities)", text)] if "language" in summary else []),
        ("read", summary["read"]),
        ("kept (perturbed)", summary["kept"]),
        ("too short (< 5 sentences)", summary["too_short"]),
        ("no maskable words", summary["no_maskable_words"]),
        ("quarantined", summary["quarantined"]),
    ]
    rows += [(f"  - {reason}", n) for reason, n in summary["quarantined_by_reason"].items()]
    rows += [
        ("instances (replaced spans)", summary["instances"]),
        *_artifact_rows(summary.get("artifacts")),
        (
            "shards done now / skipped",
            f"{summary['shards']['processed_now']} / {summary['shards']['skipped_finished']}",
        ),
        ("wall seconds", summary["timings"]["wall_seconds"]),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)


def first_rows(output: str | Path, count: int) -> list[dict]:
    """The first ``count`` kept documents of the finished shards (a local path or an object store URI)."""
    found: list[dict] = []
    for shard in finished_shards(output):
        if len(found) >= count:
            break
        part = storage.read_parquet(storage.join(output, "pool", f"{part_name(shard)}.parquet"))
        found += part.slice(0, count - len(found)).to_pylist()
    return found


def print_summary(output: str | Path, summary: dict, examples: int = 3) -> None:
    print("\n" + summary_table(summary))
    for row in first_rows(output, examples):
        print(f"\n--- {row['doc_id']} ({row['title']}) ppl={row['ppl']:.2f}, candidate {row['candidate']}")
        print(mark_replacements(row["perturbed"], row["spans"]))
    print(f"\noutputs: {output}/pool/, {output}/instances.jsonl, {output}/summary.json")
