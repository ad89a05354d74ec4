"""Step 1-2 of a round: train a detector on earlier judgments and store p(H) of every unjudged instance."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from hades_ray.io.hades_format import write_instances
from hades_ray.select.ratio import detector_rates

log = logging.getLogger(__name__)
HADES_KEYS = ("replaced", "replaced_ids", "hallucination", "id", "doc_id", "original_span", "replacement")


def heldout_split(labels: np.ndarray, share: float, seed: int) -> np.ndarray:
    """A seeded, label-stratified held-out mask (each class keeps at least one training instance)."""
    rng = np.random.default_rng(seed)
    mask = np.zeros(len(labels), dtype=bool)
    for value in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == value))
        n_out = min(round(share * len(members)), max(len(members) - 1, 0))
        mask[members[:n_out]] = True
    return mask


def read_predictions(path: Path, ids: list[str]) -> pd.DataFrame:
    """p(H) and pred from ``predict_file``'s JSONL, joined by id (or by line order where ids are absent)."""
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    frame = pd.DataFrame(rows)
    if "id" not in frame or frame["id"].isna().any():
        frame["id"] = ids
    frame["id"] = frame["id"].astype(str)
    if "pred" not in frame:
        frame["pred"] = (frame["p_hallucination"] >= 0.5).astype(int)
    return frame[["id", "p_hallucination", "pred"]].astype({"p_hallucination": float, "pred": int})


def score_with_detector(
    config, workdir, round_index: int, candidates: pd.DataFrame, out: Path, summary: dict
) -> pd.DataFrame | None:
    """Train on rounds < K, evaluate on a held-out share, score ``candidates``; None: fall back to random."""
    from hades_ray.annotate.labels import consensus_items

    sel = config.select
    labeled = consensus_items(config, workdir, list(range(round_index)))
    labels = np.array([r["hallucination"] for r in labeled], dtype=int)
    summary["counts"]["judged_before"] = len(labeled)
    if len(labeled) < sel.min_train_instances or len(np.unique(labels)) < 2:
        message = (
            f"{len(labeled)} consensus judgments ({int(labels.sum()) if len(labels) else 0} H) before round "
            f"{round_index}: too few (or one class) to train a detector "
            f"(select.min_train_instances={sel.min_train_instances}); this round samples at random"
        )
        log.warning(message)
        summary["messages"].append(message)
        return None
    from hades_ray.detect import api

    heldout = heldout_split(labels, sel.heldout_share, config.seed + round_index)
    data = out / "detector" / "data"
    train_path = write_instances(
        [{k: r[k] for k in HADES_KEYS} for r, h in zip(labeled, heldout) if not h], data / "train.txt"
    )
    heldout_path = write_instances(
        [{k: r[k] for k in HADES_KEYS} for r, h in zip(labeled, heldout) if h], data / "heldout.txt"
    )
    summary["counts"].update(train=int((~heldout).sum()), heldout=int(heldout.sum()))
    # The held-out share doubles as the trainer's validation set: judged data are scarce in early rounds.
    model_dir = Path(
        api.train_detector(
            config,
            train_path,
            heldout_path,
            out / "detector" / "model",
            detector=sel.detector,
            mode="offline",
            workers=sel.detector_workers,
        )
    )
    summary["detector"] = {"model_dir": str(model_dir), "heldout_metrics": api.evaluate_file(model_dir, heldout_path)}
    held_pred = read_predictions(
        api.predict_file(model_dir, heldout_path, out / "detector" / "heldout.pred.jsonl", config=config),
        [r["id"] for r, h in zip(labeled, heldout) if h],
    )
    summary["rates"] = detector_rates(labels[heldout], held_pred["pred"].values)
    from hades_ray.select.round import hades_record

    unjudged = write_instances([hades_record(row) for _, row in candidates.iterrows()], out / "unjudged.txt")
    scores = read_predictions(
        api.predict_file(model_dir, unjudged, out / "scores.jsonl", config=config), list(candidates["id"])
    )
    summary["counts"]["scored"] = len(scores)
    return scores
