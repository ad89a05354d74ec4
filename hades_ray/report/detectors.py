"""Detectors: the paper's metrics table (Tables 2-3 layout), ROC and reliability curves, p(H) by label,
and paired significance between detectors scored on the same instances (McNemar's exact test on the
predictions, and a paired bootstrap interval on the G-Mean difference; both from scipy)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats
from sklearn.calibration import calibration_curve
from sklearn.metrics import roc_curve

from hades_ray.io.hades_format import read_instances
from hades_ray.metrics import binary_metrics
from hades_ray.report import plots
from hades_ray.report.inputs import ReportInputError
from hades_ray.report.model import Figure, Section, Table, fmt
from hades_ray.report.reproduce import PAIRED_COLUMNS, TABLE_KEYS

TABLE_COLUMNS = ["Acc", "G-Mean", "BSS", "AUC", "N-P", "N-R", "N-F1", "H-P", "H-R", "H-F1"]


@dataclass
class Scored:
    name: str
    ids: list[str]
    labels: np.ndarray
    p: np.ndarray
    pred: np.ndarray


def from_predictions(name: str, path: Path) -> Scored:
    """A ``hades-ray predict`` output (HaDes records with ``p_hallucination`` and ``pred``), labelled ones."""
    instances = [i for i in read_instances(path) if i.label in (0, 1)]
    missing = [k for k, i in enumerate(instances) if "p_hallucination" not in i.extra or "pred" not in i.extra]
    if missing:
        raise ReportInputError(f"--detector {path}: record {missing[0] + 1} has no p_hallucination/pred; "
                               "give a `hades-ray predict` output or a detector folder")  # fmt: skip
    if not instances:
        raise ReportInputError(f"--detector {path}: no labelled (0/1) records to evaluate")
    p = [float(i.extra["p_hallucination"]) for i in instances]
    return _scored(name, instances, p, [int(i.extra["pred"]) for i in instances])


def _scored(name: str, instances: list, p, pred) -> Scored:
    ids = [str(i.extra.get("id", k)) for k, i in enumerate(instances)]
    return Scored(name, ids, np.array([i.label for i in instances]), np.asarray(p), np.asarray(pred))


def eval_instances(files: list[Path], min_round: int) -> list:
    """Labelled instances of ``files`` judged in round ``min_round`` or later (a record without a round is 0)."""
    instances = []
    for path in files:
        if not path.is_file():
            raise ReportInputError(f"{path}: missing; detector folders are scored on --dataset's --split")
        instances += [
            i for i in read_instances(path) if i.label in (0, 1) and int(i.extra.get("round", 0)) >= min_round
        ]
    if not instances:
        raise ReportInputError(f"{', '.join(map(str, files))}: no labelled instances from round {min_round} on")
    return instances


def from_detector(name: str, model_dir: Path, instances: list) -> Scored:
    """A detector folder scored in-process on the evaluation instances."""
    from hades_ray.detect.detector import Detector

    return _scored(name, instances, *Detector.open(model_dir).score_records([i.to_json() for i in instances]))


def gmean(y: np.ndarray, pred: np.ndarray) -> float:
    tpr = (pred[y == 1] == 1).mean() if (y == 1).any() else np.nan
    tnr = (pred[y == 0] == 0).mean() if (y == 0).any() else np.nan
    return float(np.sqrt(tpr * tnr))


def paired(a: Scored, b: Scored, seed: int, resamples: int = 1000) -> dict | None:
    """McNemar and the G-Mean difference on the instances both scored (by id); None if they share none."""
    index_b = {i: k for k, i in enumerate(b.ids)}
    common = [(k, index_b[i]) for k, i in enumerate(a.ids) if i in index_b]
    if not common:
        return None
    ka, kb = (np.array(c) for c in zip(*common))
    y, pa, pb = a.labels[ka], a.pred[ka], b.pred[kb]
    if not np.array_equal(y, b.labels[kb]):
        return {"a": a.name, "b": b.name, "n": len(common), "error": "the two files label the same ids differently"}
    only_a, only_b = int(((pa == y) & (pb != y)).sum()), int(((pa != y) & (pb == y)).sum())
    mcnemar = stats.binomtest(only_a, only_a + only_b, 0.5).pvalue if only_a + only_b else 1.0
    out = {"a": a.name, "b": b.name, "n": len(common), "a_right_b_wrong": only_a, "b_right_a_wrong": only_b,
           "mcnemar_exact_p": float(mcnemar), "gmean_difference": gmean(y, pa) - gmean(y, pb),
           "gmean_ci_low": None, "gmean_ci_high": None}  # fmt: skip
    if len(np.unique(y)) == 2 and len(common) >= 10:
        boot = stats.bootstrap(
            (y, pa, pb), lambda yy, xa, xb: gmean(yy, xa) - gmean(yy, xb), paired=True, vectorized=False,
            n_resamples=resamples, method="percentile", random_state=seed,
        )  # fmt: skip
        out["gmean_ci_low"], out["gmean_ci_high"] = (float(v) for v in boot.confidence_interval)
    return out


def _curves(scored: list[Scored]) -> Figure:
    fig, axes = plots.new_figure(2, width=4.2, height=3.6)
    for k, s in enumerate(scored):
        color = plots.SERIES[k % len(plots.SERIES)]
        if len(np.unique(s.labels)) == 2:
            fpr, tpr, _ = roc_curve(s.labels, s.p)
            axes[0].plot(fpr, tpr, color=color, label=s.name)
        frac, mean_p = calibration_curve(s.labels, s.p, n_bins=10, strategy="uniform")
        axes[1].plot(mean_p, frac, marker="o", color=color, label=s.name)
    for ax in axes:
        ax.plot([0, 1], [0, 1], ls=":", color="grey")
        ax.legend(fontsize=8)
    axes[0].set(title="ROC", xlabel="false positive rate", ylabel="true positive rate")
    axes[1].set(title="Reliability", xlabel="mean p(H) in bin", ylabel="share H in bin")
    return Figure("detector_curves", "ROC and reliability curves", plots.to_png(fig))


def _histograms(scored: list[Scored]) -> Figure:
    fig, axes = plots.new_figure(len(scored), width=3.4, height=2.8)
    bins = np.linspace(0, 1, 21)
    for ax, s in zip(axes, scored):
        plots.labelled_histograms(ax, {"H": s.p[s.labels == 1], "N": s.p[s.labels == 0]}, s.name, "p(H)", bins)
    return Figure("detector_p_by_label", "p(H) by label", plots.to_png(fig))


def detectors_section(scored: list[Scored], source: str, seed: int = 0) -> Section:
    metrics = {s.name: binary_metrics(s.labels, s.pred, s.p) for s in scored}
    comparisons = [c for a, b in itertools.combinations(scored, 2) if (c := paired(a, b, seed)) is not None]
    section = Section("detectors", "Detectors", numbers={"metrics": metrics, "paired": comparisons})
    section.notes.append(f"Evaluated on {source}. Percentages; BSS (Brier score) lower is better.")
    section.tables.append(
        Table("Metrics (Tables 2-3 layout)", ["Model", *TABLE_COLUMNS, "n"],
              [[name, *(fmt(100 * m[k] if m[k] is not None else None, 2) for k in TABLE_KEYS), m["n"]]
               for name, m in metrics.items()])
    )  # fmt: skip
    if comparisons:
        section.tables.append(
            Table("Paired significance on the same instances", PAIRED_COLUMNS,
                  [[c["a"], c["b"], c["n"], c.get("a_right_b_wrong"), c.get("b_right_a_wrong"),
                    fmt(c.get("mcnemar_exact_p"), 4), fmt(c.get("gmean_difference")),
                    f"[{fmt(c.get('gmean_ci_low'))}, {fmt(c.get('gmean_ci_high'))}]"] for c in comparisons])
        )  # fmt: skip
    section.figures += [_curves(scored), _histograms(scored)]
    return section
