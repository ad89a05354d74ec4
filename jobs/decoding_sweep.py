"""The decoding-strategy analysis: the same documents perturbed with greedy, top-k and top-p REPLACE,
and for each the kept candidate's perplexity, distinct replacements, the artifact rate, and the AUC
of the paper's LR feature detector trained on its learnability labels (which strategy makes the
harder data). Only ``perturb.replace.decoding`` differs between the runs; masks come from the same seed."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hades_ray.config import load_config
from hades_ray.detect.learnability import pool_instances, split_by_doc
from hades_ray.io.hades_format import write_instances
from hades_ray.report.inputs import read_json, read_pool_rows
from hades_ray.report.labelled import LEARNABILITY

STRATEGIES = ("greedy", "top_k", "top_p")


def strategy_settings(config, decoding: str) -> str:
    r = config.perturb.replace
    return {"greedy": "argmax", "top_k": f"k={r.top_k}", "top_p": f"p={r.top_p}"}[decoding]


def pool_measures(pool: Path) -> dict:
    """Kept-candidate perplexity, distinct replacements and the artifact rate of one finished pool."""
    rows = read_pool_rows(pool, ["ppl", "spans"])
    replacements = [s["replacement"].strip().lower() for r in rows for s in r["spans"] or []]
    artifacts = read_json(pool / "summary.json", "the perturbation job's summary").get("artifacts") or {}
    ppl = np.array([r["ppl"] for r in rows], dtype=float)
    return {
        "documents": len(rows),
        "kept_ppl_median": float(np.median(ppl)) if ppl.size else None,
        "kept_ppl_mean": float(ppl.mean()) if ppl.size else None,
        "replacements": len(replacements),
        "distinct_replacements": len(set(replacements)),
        "distinct_share": len(set(replacements)) / len(replacements) if replacements else None,
        "artifact_rate": artifacts.get("rate"),
    }


def detector_auc(config, pool: Path, folder: Path) -> dict:
    """Train the LR detector on 60% of the pool's documents (10% more for the trainer's own validation),
    then score the other 30%, which nothing was fit or chosen on."""
    from hades_ray.detect.api import predict_records, train_detector
    from hades_ray.metrics import binary_metrics

    parts = split_by_doc(pool_instances(pool / "pool", seed=config.seed), (0.6, 0.1, 0.3), config.seed)
    paths = {}
    for name, part in zip(("train", "valid", "test"), parts):
        paths[name] = write_instances([i.to_json() for i in part], folder / "data" / f"{name}.txt")
    model = train_detector(config, paths["train"], paths["valid"], folder / "lr", detector="lr")
    test = parts[2]
    p, pred = predict_records(model, [i.to_json() for i in test])
    labels = np.array([i.label for i in test])
    metrics = binary_metrics(labels, pred, p)
    low, high = auc_interval(labels, np.asarray(p), config.seed)
    return {"auc": metrics["auc"], "auc_ci_low": low, "auc_ci_high": high, "gmean": metrics["gmean"],
            "train": len(parts[0]), "test": len(test)}  # fmt: skip


def auc_interval(labels: np.ndarray, p: np.ndarray, seed: int) -> tuple[float | None, float | None]:
    """95% bootstrap interval of the AUC (scipy; resampled pairs), None when a class is missing."""
    from scipy import stats
    from sklearn.metrics import roc_auc_score

    if len(np.unique(labels)) < 2:
        return None, None

    def auc(y, score):
        return roc_auc_score(y, score) if len(np.unique(y)) == 2 else 0.5

    boot = stats.bootstrap((labels, p), auc, paired=True, vectorized=False, n_resamples=1000,
                           method="percentile", random_state=seed)  # fmt: skip
    return float(boot.confidence_interval.low), float(boot.confidence_interval.high)


def run_decoding_sweep(overrides: list[str], folder: Path, docs: int, candidates: int) -> dict:
    """Perturb the first ``docs`` demo documents once per strategy; the measures of each."""
    from hades_ray.perturb.runner import run_perturb

    strategies = []
    for decoding in STRATEGIES:
        config = load_config(
            "local",
            None,
            [*overrides, f"perturb.replace.decoding={decoding}", f"perturb.rank.num_candidates={candidates}"],
        )
        pool = folder / decoding
        summary = run_perturb(config, "demo", pool, limit=docs)  # finished shards of the same config are skipped
        row = {"decoding": decoding, "settings": strategy_settings(config, decoding), **pool_measures(pool)}
        row["pool_reused"] = summary["shards"]["processed_now"] == 0  # its seconds then leave perturbation out
        row |= detector_auc(config, pool, folder / f"{decoding}-detector")
        print(
            f"  {decoding}: kept ppl median {row['kept_ppl_median']:.1f}, distinct {row['distinct_replacements']}"
            f"/{row['replacements']}, artifact rate {row['artifact_rate']}, LR AUC {row['auc']:.3f} "
            f"[{row['auc_ci_low']:.3f}, {row['auc_ci_high']:.3f}]",
            flush=True,
        )
        strategies.append(row)
    return {
        "documents": strategies[0]["documents"],
        "input_rows": docs,
        "candidates": candidates,
        "detector": "LR on span features (MLM probability and entropy, TF-IDF, PPMI, POS/NER)",
        "labels": LEARNABILITY,
        "strategies": strategies,
    }
