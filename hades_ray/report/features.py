"""Features by label (the paper's feature analysis): the MLM's average probability and entropy of the
span's words, TF-IDF and PPMI, for H against N, with the difference of the means and its 95% interval
(Welch's t, scipy)."""

from __future__ import annotations

import logging
import warnings

import numpy as np
from scipy import stats

from hades_ray.detect.features.lexical import LexicalStats
from hades_ray.io.hades_format import Instance
from hades_ray.errors import UserError
from hades_ray.report import paper_figures, paper_text, plots
from hades_ray.report.model import Figure, Section, Table, fmt
from hades_ray.text.languages import Language

log = logging.getLogger(__name__)
FEATURES = ("mlm_prob", "mlm_entropy", "tfidf", "ppmi")
TITLES = {"mlm_prob": "MLM word probability", "mlm_entropy": "MLM entropy", "tfidf": "TF-IDF", "ppmi": "PPMI"}


def mlm_features(source: str, instances: list[Instance], window: int, batch: int = 16) -> np.ndarray:
    """``[n, 2]`` MLM probability and entropy of each masked span (hades_ray/detect/features/span_features.py)."""
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from hades_ray.detect.features.span_features import mlm_span_features

    hf_logging.disable_progress_bar()  # the report's own log lines say what runs
    torch.set_num_threads(1)  # the report runs beside other jobs; one thread keeps it polite
    tokenizer = AutoTokenizer.from_pretrained(source)
    model = AutoModelForMaskedLM.from_pretrained(source).eval()
    items = [{"words": i.words, "start": i.start, "end": i.end} for i in instances]
    parts = [mlm_span_features(model, tokenizer, items[k : k + batch], window) for k in range(0, len(items), batch)]
    return np.vstack(parts) if parts else np.zeros((0, 2))


def lexical_features(instances: list[Instance], vocab: int, window: int) -> np.ndarray:
    """``[n, 2]`` TF-IDF and PPMI, the statistics fit on the instances' own texts (each text once)."""
    texts = list({" ".join(i.words): i.words for i in instances}.values())
    lexical = LexicalStats.fit(texts, vocab, window)
    return np.array([lexical.features(i.words, i.start, i.end) for i in instances]).reshape(-1, 2)


def compare(h: np.ndarray, n: np.ndarray) -> dict:
    """Means of H and N, their difference and its 95% Welch interval and p-value."""
    out = {"n_h": int(h.size), "n_n": int(n.size), "mean_h": None, "mean_n": None, "std_h": None, "std_n": None}
    for side, values in (("h", h), ("n", n)):
        if values.size:
            out[f"mean_{side}"] = float(values.mean())
            out[f"std_{side}"] = float(values.std(ddof=1 if values.size > 1 else 0))
    if h.size < 2 or n.size < 2:
        return out | {"difference": None, "ci_low": None, "ci_high": None, "p_value": None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # near-constant features (a tiny sample): the CI says it
        test = stats.ttest_ind(h, n, equal_var=False)
    low, high = test.confidence_interval(0.95)
    return out | {
        "difference": float(h.mean() - n.mean()),
        "ci_low": float(low),
        "ci_high": float(high),
        "p_value": float(test.pvalue),
    }


def _figure(values: dict[str, np.ndarray], labels: np.ndarray) -> Figure:
    fig, axes = plots.new_figure(len(values), width=3.0, height=2.8)
    for ax, (name, column) in zip(axes, values.items()):
        finite = column[np.isfinite(column)]
        bins = np.histogram_bin_edges(finite, bins=20) if finite.size else 10
        by_label = {"H": column[(labels == 1) & np.isfinite(column)], "N": column[(labels == 0) & np.isfinite(column)]}
        plots.labelled_histograms(ax, by_label, TITLES[name], TITLES[name], bins)
    return Figure("features_by_label", "Span features by label (densities)", plots.to_png(fig))


def features_section(
    instances: list[Instance], source: str, mlm_source: str | None, detect, tags: dict | None,
    language: Language,
) -> Section:  # fmt: skip
    """``mlm_source``: the MLM's resolved path, or None (then only TF-IDF and PPMI, and the note says why);
    ``tags``: a dataset's span tags (``tags.json``) for Table 4, else spaCy tags the spans."""
    section = Section("features", "Features by label")
    section.notes.append(f"{len(instances)} instances; labels: {source}.")
    labels = np.array([i.label for i in instances], dtype=int)
    values = {}
    if mlm_source is not None:
        mlm = mlm_features(mlm_source, instances, detect.feature_window, detect.feature_batch_size)
        values = {"mlm_prob": mlm[:, 0], "mlm_entropy": mlm[:, 1]}
        section.notes.append(f"MLM: {mlm_source}, window {detect.feature_window} tokens, the span masked.")
    else:
        section.notes.append("MLM features left out: the MLM is not available (run `hades-ray models build`).")
    lexical = lexical_features(instances, detect.ppmi_vocab, detect.ppmi_window)
    values |= {"tfidf": lexical[:, 0], "ppmi": lexical[:, 1]}
    results = {name: compare(column[labels == 1], column[labels == 0]) for name, column in values.items()}
    section.numbers = {"labels": source, "instances": len(instances), "features": results}
    section.tables.append(
        Table(
            "Mean per label, H - N and its 95% confidence interval (Welch's t)",
            ["feature", "H mean", "N mean", "H - N", "95% CI", "p", "n H / n N"],
            [[TITLES[name], fmt(r["mean_h"], 4), fmt(r["mean_n"], 4), fmt(r["difference"], 4),
              f"[{fmt(r['ci_low'], 4)}, {fmt(r['ci_high'], 4)}]", fmt(r["p_value"], 4), f"{r['n_h']} / {r['n_n']}"]
             for name, r in results.items()],
        )
    )  # fmt: skip
    section.tables.append(table_1(results))
    section.numbers["table_1b"] = paper_text.correlations(values, labels)
    section.tables.append(paper_text.table_1b(section.numbers["table_1b"]))
    try:
        span_tags, tags_source = paper_text.instance_tags(instances, tags, language)
    except UserError as error:  # no spaCy pipeline for the language: Table 4 needs tags
        section.notes.append(f"Table 4 left out: no tags for the spans ({error}).")
    else:
        numbers = paper_text.table_4_numbers(values, labels, span_tags)
        section.numbers["table_4"] = {"tags": tags_source, "rows": numbers}
        section.tables.append(paper_text.table_4(numbers, tags_source))
    section.figures.append(_figure(values, labels))
    return section


def _mean_std(mean: float | None, std: float | None) -> str:
    return "-" if mean is None else f"{mean:.3g} ({std:.3g})"


def table_1(results: dict[str, dict]) -> Table:
    """The paper's Table 1 (mean and standard deviation of each feature per label) beside ours."""
    rows = []
    for name, paper in paper_figures.TABLE_1.items():
        ours = results.get(name, {})
        rows.append([TITLES[name], _mean_std(*paper["H"]), _mean_std(ours.get("mean_h"), ours.get("std_h")),
                     _mean_std(*paper["N"]), _mean_std(ours.get("mean_n"), ours.get("std_n"))])  # fmt: skip
    return Table("Table 1 beside ours: mean (standard deviation) per label",
                 ["feature", "paper H", "ours H", "paper N", "ours N"], rows)  # fmt: skip
