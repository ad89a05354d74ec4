"""What ``hades-ray perturb`` prints when it ends: the summary table and a few perturbed examples, their
replaced spans marked."""

from __future__ import annotations

import heapq
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


def lowest_perplexity_rows(output: str | Path, count: int) -> list[dict]:
    """The ``count`` kept documents of the finished shards whose chosen candidate RANK's model found the most
    fluent (lowest ``ppl``; ties by ``doc_id``): the examples a run prints, chosen by that rule alone, so they
    show what RANK kept rather than whichever documents came first. Reads two columns of each shard and holds
    ``count`` rows, whatever the output's size (a local path or an object store URI)."""

    def part(shard):
        return storage.join(output, "pool", f"{part_name(shard)}.parquet")

    def keys():
        for shard in finished_shards(output):
            columns = storage.read_parquet(part(shard), ["ppl", "doc_id"]).to_pydict()
            yield from ((ppl, doc_id, shard) for ppl, doc_id in zip(columns["ppl"], columns["doc_id"], strict=True))

    best = heapq.nsmallest(count, keys(), key=lambda key: key[:2])
    wanted = {doc_id for _, doc_id, _ in best}
    rows = []
    for shard in dict.fromkeys(shard for *_, shard in best):
        rows += [row for row in storage.read_parquet(part(shard)).to_pylist() if row["doc_id"] in wanted]
    return sorted(rows, key=lambda row: (row["ppl"], row["doc_id"]))


def print_summary(output: str | Path, summary: dict, examples: int = 3, models=None) -> None:
    """The table, the examples, the outputs and, when the run used the offline kit (``models``: the
    run's ``models`` section), what those models are."""
    print("\n" + summary_table(summary))
    for row in lowest_perplexity_rows(output, examples):
        print(f"\n--- {row['doc_id']} ({row['title']}) ppl={row['ppl']:.2f}, candidate {row['candidate']}")
        print(mark_replacements(row["perturbed"], row["spans"]))
    print(f"\noutputs: {output}/pool/, {output}/instances.jsonl, {output}/summary.json")
    lines = kit_lines(models) if models is not None else []
    if lines:
        print("\n" + "\n".join(lines))


KIT_ROLES = {"mlm": "REPLACE's masked LM", "causal_lm": "RANK's GPT-2"}


def kit_lines(models) -> list[str]:
    """What the offline kit's models are, with their held-out figures (``models/quality.json``), and the
    command that runs the paper's; nothing when the run used no kit model."""
    used = {role: getattr(models, role) for role in KIT_ROLES if getattr(models, role).startswith("local:")}
    if not used:
        return []
    lines = ["models: the offline kit's, small ones trained here in minutes on the demo corpus (not the paper's),"]
    lines.append("so odd replacements are a small model's guesses, not the method's:")
    quality, built = _kit_quality()
    for role, reference in used.items():
        lines.append(f"  {reference} ({KIT_ROLES[role]}): {_figure(role, quality, built)}")
    lines.append("the paper's models (BERT-base, GPT-2; needs the Hugging Face hub, a GPU helps):")
    lines.append("  hades-ray perturb --input demo --limit 200 --output out/demo-paper --preset paper")
    return lines


def _kit_quality() -> tuple[dict, dict]:
    import json

    from hades_ray.models.kit import model_status, models_root
    from hades_ray.models.quality import QUALITY_FILE

    path = models_root() / QUALITY_FILE
    try:
        quality = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        quality = {}
    return quality, {name: (s.get("info") or {}) for name, s in model_status().items()}


def _figure(role: str, quality: dict, built: dict) -> str:
    name = "mlm" if role == "mlm" else "gpt2"
    seconds = built.get(name, {}).get("seconds")
    trained = f"trained {seconds / 60:.1f} min, " if isinstance(seconds, (int, float)) else ""
    report = quality.get(name) or {}
    if name == "mlm" and report.get("top10") is not None:
        top1 = f"top-1 {report['top1']:.1%}, " if report.get("top1") is not None else ""
        held = f"held-out recovery of a masked content word {top1}top-10 {report['top10']:.1%} (n={report.get('n')})"
    elif name == "gpt2" and report.get("pairwise_accuracy") is not None:
        swapped = quality.get("swapped_words", 3)  # reports before it was recorded swapped three
        words = "one content word" if swapped == 1 else f"{swapped} content words"
        held = (
            f"held-out preference for the original lead over one with {words} swapped "
            f"{report['pairwise_accuracy']:.1%} (n={report.get('n')})"
        )
    else:
        held = "held-out quality not measured (hades-ray models evaluate)"
    return trained + held
