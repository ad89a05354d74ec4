"""Context length (the paper's Fig. 6) and decoding strategies, from the results ``hades-ray reproduce
context`` and ``reproduce decoding`` write (``analyses.json``); the report only reads them.
``context_figure`` and ``decoding_figure`` also draw the PNGs those commands write beside their results."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hades_ray.report import plots
from hades_ray.report.inputs import ReportInputError, read_json
from hades_ray.report.model import Figure, Section, Table, fmt

DECODING_MEASURES = (
    ("kept_ppl_median", "kept-candidate perplexity (median)"),
    ("distinct_share", "distinct replacements / replacements"),
    ("artifact_rate", "artifact rate"),
    ("incoherence_rate", "incoherent (surprisal jump > ln 100)"),
    ("auc", "AUC of a detector trained on it"),  # results made before the paper's grid
)


def read_analyses(path: Path) -> dict:
    data = read_json(path, "the results of hades-ray reproduce context / reproduce decoding")
    for key in ("context_length", "decoding"):
        if key in data and not isinstance(data[key], dict):
            raise ReportInputError(
                f"{path}: '{key}' must be an object; rerun hades-ray reproduce context or reproduce decoding"
            )
    return data


def _trials(results: dict, path: Path) -> list[dict]:
    trials = results.get("trials")
    if not isinstance(trials, list) or not all(isinstance(t, dict) and "window" in t and "mode" in t for t in trials):
        raise ReportInputError(f"{path}: context_length.trials must list objects with mode and window")
    return sorted(trials, key=lambda t: (t["mode"], t["window"]))


def auc_half_width(auc: float | None, n_h: int | None, n_n: int | None) -> float | None:
    """Half-width of a 95% interval on an AUC from Hanley and McNeil's (1982) standard error: the trials
    report metrics only, so there are no per-instance scores to bootstrap."""
    if auc is None or not n_h or not n_n:
        return None
    q1, q2 = auc / (2 - auc), 2 * auc**2 / (1 + auc)
    variance = (auc * (1 - auc) + (n_h - 1) * (q1 - auc**2) + (n_n - 1) * (q2 - auc**2)) / (n_h * n_n)
    return 1.96 * float(np.sqrt(max(variance, 0.0)))


CONTEXT_METRICS = (("accuracy", "Accuracy"), ("gmean", "G-Mean"), ("bss", "BSS (lower is better)"), ("auc", "AUC"))


def window_label(results: dict) -> str:
    """What the windows count: words (our reading; the paper's Fig. 6 gives no unit) or, in results from
    before the key, subword tokens."""
    return "words" if results.get("window_unit") == "words" else "subword tokens"


def context_figure(trials: list[dict], unit: str) -> bytes:
    """The paper's Fig. 6: each metric against the window (log scale), one line per mode."""
    fig, axes = plots.new_figure(len(CONTEXT_METRICS), width=3.3, height=3.0)
    windows = sorted({t["window"] for t in trials})
    for ax, (metric, title) in zip(axes, CONTEXT_METRICS):
        for k, mode in enumerate(sorted({t["mode"] for t in trials})):
            rows = [t for t in trials if t["mode"] == mode]
            ys = [np.nan if t.get(metric) is None else t[metric] for t in rows]
            ax.plot([t["window"] for t in rows], ys, marker="o", color=plots.SERIES[k], label=mode)
        ax.set_xscale("log")
        ax.set_xticks(windows, [str(w) for w in windows])
        ax.minorticks_off()
        ax.set(title=title, xlabel=f"context window ({unit})")
        ax.legend(fontsize=8)
    return plots.to_png(fig)


def context_section(results: dict, path: Path) -> Section:
    trials = _trials(results, path)
    unit = window_label(results)
    section = Section("context_length", "Context length (the paper's Fig. 6)", numbers=results)
    section.notes.append(
        f"Span classifiers ({results.get('backbone', 'the encoder')}) trained for {results.get('epochs')} epochs per "
        f"window and mode, one Ray Tune grid; labels: {results.get('labels')}. {results.get('train')} training and "
        f"{results.get('test')} test instances, split by document; no epoch or setting was chosen on the test part."
    )
    section.tables.append(
        Table(f"Accuracy, G-Mean, BSS and AUC by context window ({unit})",
              ["mode", "window", "G-Mean", "AUC", "AUC 95% ± (Hanley-McNeil)", "accuracy", "BSS"],
              [[t["mode"], t["window"], fmt(t.get("gmean")), fmt(t.get("auc")),
                fmt(auc_half_width(t.get("auc"), results.get("test_h"), results.get("test_n"))),
                fmt(t.get("accuracy")), fmt(t.get("bss"))] for t in trials])
    )  # fmt: skip
    section.figures.append(
        Figure("context_length", "Offline and online detectors as the window grows", context_figure(trials, unit))
    )
    return section


def decoding_figure(strategies: list[dict]) -> bytes:
    """One bar chart per measure the strategies have, a bar per setting."""
    measures = [(k, t) for k, t in DECODING_MEASURES if any(s.get(k) is not None for s in strategies)]
    fig, axes = plots.new_figure(len(measures), width=3.2, height=3.0)
    names = [s.get("label") or s["decoding"] for s in strategies]
    for ax, (key, title) in zip(axes, measures):
        values = [np.nan if s.get(key) is None else s[key] for s in strategies]
        bars = ax.bar(names, values, color=[plots.SERIES[k % len(plots.SERIES)] for k in range(len(names))])
        if key == "auc" and all(s.get("auc_ci_low") is not None for s in strategies):
            below = [v - s["auc_ci_low"] for v, s in zip(values, strategies)]
            above = [s["auc_ci_high"] - v for v, s in zip(values, strategies)]
            ax.errorbar(names, values, yerr=[below, above], fmt="none", ecolor="black", capsize=4)
        ax.bar_label(bars, fmt="%.3g", fontsize=7)  # an all-zero measure (no artifacts) still shows its values
        top = [v for v in values if v == v] + [s.get("auc_ci_high") or 0 for s in strategies if key == "auc"]
        ax.set_ylim(0, max(top + [0]) * 1.15 or 1)
        ax.set_title(title, fontsize=9)
        ax.tick_params(axis="x", labelrotation=60, labelsize=7)
    return plots.to_png(fig)


def decoding_section(results: dict, path: Path) -> Section:
    strategies = results.get("strategies")
    if not isinstance(strategies, list) or not all(isinstance(s, dict) and "decoding" in s for s in strategies):
        raise ReportInputError(f"{path}: decoding.strategies must list objects with a 'decoding' name")
    section = Section("decoding", "Decoding strategies", numbers=results)
    proxy = results.get("proxy") or {}
    section.notes.append(
        f"The same {results.get('documents')} texts perturbed with each setting ({results.get('candidates')} "
        f"candidates each, masks from the same seed)."
        + (f" Incoherent: {proxy.get('definition')} (LM {proxy.get('lm')})." if proxy else "")
        + (f" Detector: {results['detector']}, labels: {results.get('labels')}; a lower AUC means harder data."
           if results.get("detector") else "")
    )  # fmt: skip
    measures = [(k, t) for k, t in DECODING_MEASURES if any(s.get(k) is not None for s in strategies)]
    section.tables.append(
        Table("Per setting", ["decoding", "settings", "replacements", "distinct", *(t for _, t in measures)],
              [[s["decoding"], s.get("settings", ""), s.get("replacements"), s.get("distinct_replacements"),
                *(fmt(s.get(k)) for k, _ in measures)] for s in strategies])
    )  # fmt: skip
    section.figures.append(
        Figure("decoding", "The decoding settings' perturbations of the same texts", decoding_figure(strategies))
    )
    return section
