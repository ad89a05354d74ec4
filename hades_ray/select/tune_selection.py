"""Sweeping a round's selection cuts as Tune trials over its stored scores (no model reruns).

A trial's score is how far the expected H share of the batch, after Eq. 1 rebalancing, lands from
50/50, plus the share of the batch that the candidates left could not fill. The sweep is a step
(``hades_ray/pipeline/steps.py``) over the round's record and the grid; an unfinished one starts a
fresh grid (never ``Tuner.restore``, which would unpickle the folder's files).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pandas as pd

from hades_ray.pipeline.steps import Step, digest_of, run_step
from hades_ray.pipeline.storage import delete, write_json_atomic
from hades_ray.pool.layout import round_dir
from hades_ray.select import filters
from hades_ray.select.ratio import explain_ratio


def selection_score(
    frame: pd.DataFrame, rates: dict, batch_size: int, low: float, high: float, similarity_cut: float
) -> dict:
    """Expected label balance of the batch those cuts would give (pure; reads stored columns only)."""
    keep = (
        filters.threshold_keep(frame["p_hallucination"].values, low, high)
        & filters.paraphrase_keep(frame["similarity"].values, similarity_cut)
        & frame["keep_swap"].values
    )
    n_pred_h = float((keep & (frame["pred"].values == 1)).sum())
    n_pred_n = float((keep & (frame["pred"].values == 0)).sum())
    ratio = explain_ratio(rates["alpha"], rates["beta"], rates["gamma"]).value
    h, n = filters.expected_balance(n_pred_h, n_pred_n, rates, ratio)
    available = h + n
    share_h = h / available if available else 0.0
    shortfall = max(0.0, batch_size - available) / batch_size
    return {
        "balance_error": abs(share_h - 0.5) + shortfall,
        "expected_h_share": share_h,
        "available": available,
        "R": ratio,
    }


def _trial(trial: dict, frame: pd.DataFrame, rates: dict, batch_size: int) -> dict:
    if trial["p_low"] >= trial["p_high"]:
        return {"balance_error": 2.0, "expected_h_share": 0.0, "available": 0.0, "R": 0.0}
    return selection_score(frame, rates, batch_size, trial["p_low"], trial["p_high"], trial["similarity_cut"])


def tune_selection(config, workdir, round_index: int, grid: dict | None = None, force: bool = False) -> dict:
    """Grid over p(H) low/high and the similarity cut for a selected round; writes tune-selection/best.json."""
    out = round_dir(workdir, round_index)
    if not (out / "round.json").is_file() or not (out / "candidates").is_dir():
        raise FileNotFoundError(f"round {round_index} is not selected yet ({out}); run `hades-ray round` first")
    summary = json.loads((out / "round.json").read_text())
    if "rates" not in summary:
        raise FileNotFoundError(f"round {round_index} has no detector scores (round 0 or a random fallback)")
    # A small grid: each Tune trial costs seconds of overhead on 2 cores (64 trials took 3.8 min).
    grid = grid or {"p_low": [0.0, 0.05, 0.15], "p_high": [0.85, 0.95, 1.0], "similarity_cut": [0.85, 0.9]}
    sweep = functools.partial(_sweep, config, out, round_index, summary, grid)
    name, folder = f"round {round_index}'s selection sweep", str(out / "tune-selection")
    return run_step(Step(name, folder, digest_of(grid), sweep, digest_of(summary)), force)


def _sweep(config, out: Path, round_index: int, summary: dict, grid: dict) -> dict:
    from ray import tune

    from hades_ray.ray_runtime import init_ray

    # The workers' candidate parts of the round (its ``_markers`` folder is skipped by the reader).
    frame = pd.read_parquet(out / "candidates", columns=["id", "p_hallucination", "pred", "similarity", "keep_swap"])
    init_ray(config.ray.address, config.ray.num_cpus)
    storage = (out / "tune-selection").resolve()
    delete(storage / "sweep")  # an unfinished sweep's trials: a fresh grid replaces them
    trainable = tune.with_resources(
        tune.with_parameters(_trial, frame=frame, rates=summary["rates"], batch_size=summary["batch_size_target"]),
        {"cpu": 0.25},
    )
    tuner = tune.Tuner(
        trainable,
        param_space={k: tune.grid_search(v) for k, v in grid.items()},
        tune_config=tune.TuneConfig(metric="balance_error", mode="min"),
        run_config=tune.RunConfig(name="sweep", storage_path=str(storage), verbose=0),
    )
    results = tuner.fit()
    best = results.get_best_result()
    report = {
        "round": round_index,
        "best": best.config,
        "best_metrics": {k: best.metrics[k] for k in ("balance_error", "expected_h_share", "available", "R")},
        "trials": len(results.get_dataframe()),
        "note": "apply with --set select.p_low=... --set select.p_high=... "
        "--set select.paraphrase_threshold=... in a later round; this round is left as selected",
    }
    write_json_atomic(storage / "best.json", report)
    return report
