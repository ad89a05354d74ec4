"""The Pool section: documents read, kept and quarantined, span and replacement sizes, the kept
candidate's perplexity against the others, and the artifact rate."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hades_ray.perturb.artifacts import artifact_summary, count_artifacts
from hades_ray.report import paper_text, plots
from hades_ray.report.inputs import read_json, read_pool_rows
from hades_ray.config import recorded_language
from hades_ray.report.model import Figure, Section, Table, fmt

LABELS = {
    "spans_per_document": "spans per document",
    "words_per_span": "words per original span",
    "replacement_words": "words per replacement",
    "kept_ppl": "perplexity of the kept candidate",
    "other_candidates_ppl": "perplexity of the other candidates",
    "kept_over_median_other": "kept / median of its document's others",
}
COLUMNS = ["doc_id", "title", "perturbed", "ppl", "candidate", "candidate_ppls", "spans"]


def _stats(values) -> dict:
    values = np.asarray(values, dtype=float)
    if not values.size:
        return {"n": 0}
    return {"n": int(values.size), "mean": round(float(values.mean()), 3), "median": round(float(np.median(values)), 3)}


def size_numbers(rows: list[dict]) -> dict[str, list[int]]:
    """Spans per document, words per original span and words per replacement."""
    spans = [s for r in rows for s in r["spans"] or []]
    return {
        "spans_per_document": [len(r["spans"] or []) for r in rows],
        "words_per_span": [len(s["original"].split()) for s in spans],
        "replacement_words": [len(s["replacement"].split()) for s in spans],
    }


def perplexity_numbers(rows: list[dict]) -> dict:
    """The kept candidate's perplexity against the other candidates of the same document."""
    kept, others, ratios = [], [], []
    for row in rows:
        rest = [p for i, p in enumerate(row["candidate_ppls"] or []) if i != row["candidate"]]
        kept.append(row["ppl"])
        others += rest
        if rest:
            ratios.append(row["ppl"] / float(np.median(rest)))
    return {"kept": kept, "others": others, "kept_over_median_other": ratios}


def _counts_table(summary: dict) -> Table:
    rows = [[name, summary.get(key)] for name, key in (
        ("documents read", "read"),
        ("kept (perturbed)", "kept"),
        ("too short (< 5 sentences)", "too_short"),
        ("no maskable words", "no_maskable_words"),
        ("quarantined", "quarantined"),
    )]  # fmt: skip
    rows += [[f"quarantined: {reason}", n] for reason, n in summary.get("quarantined_by_reason", {}).items()]
    rows.append(["instances (replaced spans)", summary.get("instances")])
    return Table("Documents", ["", "count"], rows)


def _figures(sizes: dict, ppl: dict) -> list[Figure]:
    fig, axes = plots.new_figure(3, width=3.6)
    plots.histogram(axes[0], sizes["spans_per_document"], "spans per document", "spans", integer=True)
    plots.histogram(axes[1], sizes["words_per_span"], "words per original span", "words", integer=True)
    plots.histogram(axes[2], sizes["replacement_words"], "words per replacement", "words", integer=True)
    sizes_png = plots.to_png(fig)
    fig, axes = plots.new_figure(2, width=4.2)
    bins = np.histogram_bin_edges(np.log10(np.asarray(ppl["kept"] + ppl["others"], dtype=float)), bins=30)
    logs = {"kept": np.log10(ppl["kept"]), "others": np.log10(ppl["others"]) if ppl["others"] else []}
    for name, color in (("others", plots.N_COLOR), ("kept", plots.H_COLOR)):
        if len(logs[name]):
            axes[0].hist(logs[name], bins=bins, density=True, alpha=0.55, color=color, label=name)
    axes[0].set(title="log10 perplexity: kept candidate vs the others", xlabel="log10 perplexity")
    axes[0].legend(fontsize=8)
    plots.histogram(axes[1], ppl["kept_over_median_other"], "kept / median of the others", "ratio")
    return [
        Figure("pool_sizes", "Spans per document, words per span and per replacement", sizes_png),
        Figure("pool_perplexity", "Perplexity of the kept candidate against the other candidates", plots.to_png(fig)),
    ]


def pool_section(pool: Path, max_docs: int | None = None, examples: int = 3) -> Section:
    """Numbers, tables and figures of a finished perturbation output folder."""
    summary = read_json(pool / "summary.json", "the perturbation job's summary")
    rows = read_pool_rows(pool, COLUMNS, max_docs)
    sizes, ppl = size_numbers(rows), perplexity_numbers(rows)
    language = recorded_language(pool)
    artifacts = summary.get("artifacts") or artifact_summary(count_artifacts(rows, language), language)
    section = Section("pool", "Pool")
    section.tables.append(_counts_table(summary))
    section.numbers = {
        "summary": {k: summary.get(k) for k in ("read", "kept", "too_short", "no_maskable_words", "quarantined")},
        "quarantined_by_reason": summary.get("quarantined_by_reason", {}),
        "documents_in_report": len(rows),
        **{name: _stats(values) for name, values in sizes.items()},
        "kept_ppl": _stats(ppl["kept"]),
        "other_candidates_ppl": _stats(ppl["others"]),
        "kept_over_median_other": _stats(ppl["kept_over_median_other"]),
        "artifacts": artifacts,
    }
    rate = artifacts.get("rate")
    section.tables.append(
        Table(
            "Sizes, perplexity and artifacts",
            ["measure", "n", "mean", "median"],
            [[LABELS[name], *(fmt(section.numbers[name].get(k)) for k in ("n", "mean", "median"))]
             for name in (*sizes, "kept_ppl", "other_candidates_ppl", "kept_over_median_other")]
            + [["artifact rate", artifacts.get("replacements"), fmt(rate, 4), ""]],
        )
    )  # fmt: skip
    section.notes.append(
        f"Artifact rate {fmt(rate, 4)}: {artifacts.get('with_artifacts')} of {artifacts.get('replacements')} "
        "replacements have punctuation the original lacked, a repeated word, or more words than the original "
        "(hades_ray/perturb/artifacts.py)."
    )
    if summary.get("kept") is not None and len(rows) < summary["kept"]:
        section.notes.append(
            f"Sizes and perplexities over the first {len(rows)} of the {summary['kept']} kept documents (--max-docs); "
            "the counts and the artifact rate cover them all."
        )
    table, section.numbers["paper_text"] = paper_text.text_figures(
        {"pool": summary.get("instances")}, "summary.json's instances (replaced spans): our reading of the pool"
    )
    section.tables.append(table)
    if rows:
        section.figures += _figures(sizes, ppl)
    section.examples = [
        {"doc_id": r["doc_id"], "title": r["title"], "text": r["perturbed"], "spans": r["spans"] or []}
        | language.record_fields()
        for r in rows[:examples]
    ]
    return section
