"""One selection round (paper §3.3): score, filter, rebalance and sample the next batch for judges.

The driver plans and merges; workers do the rows. Round 0 samples the pool at random. Round K >= 1
trains a detector on the judgments of the rounds before it (``select/detector.py``), has workers write
p(H) of every pool instance (``select/scores.py``), places the p(H) band from the histograms in their
markers, and then runs the selection pass (``select/candidates.py``): the paraphrase cut, the
Date/Name swap drop (a Date or Name replaced by any Date or Name) and Eq. 1 subsampling as per-row
seeded decisions, each shard's candidates written by its worker, and the batch drawn as the smallest
seeded sample keys. The model-free filters apply in every round, round 0 included.

Features, scores and candidates are three jobs on the pipeline engine, run by the one ``Executor`` the
round is given (``hades_ray/pipeline/executor.py``: lock, Ray, markers in ``_markers/``, skip policy),
over one plan of the pool made when the round starts. So a rerun of a crashed round resumes: the
features, its detector (reused from ``detector/trained.json``), its scores and its candidates are all
kept where finished, and only the missing shards run. A setting changed since (the features', the
rule's, the batch size) stops the round with the engine's message naming the shards; ``hades-ray round
--force`` redoes them. A selected round (its round.json) is never redone.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import time
from collections import Counter
from pathlib import Path

from hades_ray.config import save_config
from hades_ray.pipeline.executor import Executor
from hades_ray.pipeline.job import ShardJob
from hades_ray.pipeline.lock import OutputLock
from hades_ray.pipeline.storage import write_json_atomic
from hades_ray.select import filters
from hades_ray.select.batch import chosen_rows, write_batch
from hades_ray.select.candidates import batch_keys, candidates_dir, candidates_job
from hades_ray.select.decide import Rule, rule_for
from hades_ray.select.detector import train_round_detector
from hades_ray.select.feature_job import ensure_features
from hades_ray.select.ratio import explain_ratio
from hades_ray.select.schedule import round_size
from hades_ray.select.scores import histogram_total, scores_job
from hades_ray.workdir import existing_rounds, pool_dir, pool_shards, round_dir, set_pool

log = logging.getLogger(__name__)
COUNT_ORDER = (
    "pool",
    "assigned_before",
    "unjudged",
    "judged_before",
    "train",
    "heldout",
    "calibration",
    "folds",
    "rated",
    "scored",
    "after_thresholds",
    "after_paraphrase",
    "obvious_swaps",
    "after_swaps",
    "predicted_h_before_rebalance",
    "predicted_h_after_rebalance",
    "after_rebalance",
    "batch",
)


def assigned_ids(workdir: Path, before: int) -> set[str]:
    """Ids of every instance put in a batch by a round before ``before`` (judged or not)."""
    ids: set[str] = set()
    for k in range(before):
        path = round_dir(workdir, k) / "batch.jsonl"
        ids |= {json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}
    return ids


def _check_round(workdir: Path, round_index: int) -> None:
    out = round_dir(workdir, round_index)
    if (out / "round.json").is_file():
        raise FileExistsError(
            f"round {round_index} was already selected ({out / 'round.json'}); "
            "rounds are never overwritten: start the next round or a new work directory"
        )
    missing = [k for k in range(round_index) if k not in existing_rounds(workdir)]
    if missing:
        raise FileNotFoundError(f"round {round_index} needs rounds {missing} first")


def run_round(
    config, workdir: str | Path, round_index: int, pool: str | None = None, executor: Executor | None = None
) -> dict:
    """Select round ``round_index``'s batch; writes batch.jsonl, candidates/, scores/ and round.json.
    ``executor`` runs its passes (default: on Ray per the config, finished shards kept)."""
    workdir = Path(workdir)
    if pool:
        set_pool(workdir, pool)
    _check_round(workdir, round_index)
    with OutputLock(workdir):
        return _select(config, workdir, round_index, executor or Executor.of(config.ray))


def _with_ratio(rule: Rule, summary: dict) -> Rule:
    """Eq. 1's R from the calibration rates (round.json says when it is undefined or clipped)."""
    rates = summary["rates"]
    ratio = explain_ratio(rates["alpha"], rates["beta"], rates["gamma"])
    summary["ratio"] = {"R": ratio.value, "raw": ratio.raw, "message": ratio.message}
    if ratio.message:
        summary["messages"].append(ratio.message)
        log.warning(ratio.message)
    return dataclasses.replace(rule, ratio=ratio.value)


def _band(config, rule: Rule, histogram: dict[int, int], size: int, summary: dict) -> Rule:
    """The p(H) band placed on the pool's survivor histogram so that the candidate target is met
    after every filter (R included)."""
    sel = config.select
    target = sel.candidate_target or 3 * size
    low, high = filters.thresholds_from_histogram(histogram, target, sel.p_low, sel.p_high)
    available = histogram_total(histogram)
    summary["thresholds"] = {"p_low": low, "p_high": high}
    if sel.p_low < 0 or sel.p_high < 0:
        summary["thresholds_found_for_target"] = target
    summary["candidate_target"] = {
        "target": target,
        "counted_after": "p(H) band, paraphrase cut, Date/Name drop and Eq. 1 subsampling",
        "available_before_band": available,
    }
    if available < size:
        summary["messages"].append(
            f"only {available} unjudged instances pass the paraphrase cut, the Date/Name drop and Eq. 1 "
            f"subsampling (R = {rule.ratio:.3f}), fewer than the batch of {size}, before any p(H) band: "
            "add to the pool, or relax select.paraphrase_threshold / select.date_name_drop_share"
        )
    return dataclasses.replace(rule, p_low=low, p_high=high)


def _scores(config, workdir: Path, round_index: int, shards: list, model_dir: Path, rule: Rule) -> ShardJob:
    """The scores job of the round's detector; its stages (the detector's actors) are built when there is work."""
    from hades_ray.detect.detector import Detector

    detector = Detector.open(model_dir)
    stages = functools.partial(detector.stages, config.detect, num_gpus=config.select.score_num_gpus)
    return scores_job(workdir, round_index, shards, stages, detector.identity(), rule)


def _select(config, workdir: Path, round_index: int, executor: Executor) -> dict:
    sel = config.select
    size = round_size(sel, round_index)
    out = round_dir(workdir, round_index)
    clock = Clock()
    shards = pool_shards(pool_dir(workdir))  # one plan of the pool for every pass of the round
    summary: dict = {"round": round_index, "batch_size_target": size, "counts": {}, "messages": []}
    summary["features"] = ensure_features(config, workdir, executor, shards)
    clock.lap("features")
    taken = assigned_ids(workdir, round_index)
    out.mkdir(parents=True, exist_ok=True)
    rule = rule_for(config, round_index, taken)
    model_dir = train_round_detector(config, workdir, round_index, out, summary) if round_index else None
    clock.lap("detector")
    scores = ""
    if model_dir is not None:
        rule = _with_ratio(rule, summary)
        job = _scores(config, workdir, round_index, shards, model_dir, rule)
        rule, scores = _band(config, rule, executor.run(job)["survivor_histogram"], size, summary), job.digest
    clock.lap("scores")
    counts = Counter(executor.run(candidates_job(config, workdir, round_index, shards, rule, size, scores))["counts"])
    chosen = batch_keys(candidates_dir(workdir, round_index), size)
    clock.lap("selection_pass")
    counts.update(assigned_before=len(taken), batch=len(chosen))
    summary["counts"] = {
        k: int({**summary["counts"], **counts}[k]) for k in COUNT_ORDER if k in {**summary["counts"], **counts}
    }
    summary["batch_sample_key_max"] = chosen[-1][0] if chosen else None
    if len(chosen) < size:
        summary["messages"].append(short_batch_message(summary["counts"], size, rule))
    write_batch(workdir, chosen_rows(workdir, chosen), out / "batch.jsonl")
    clock.lap("batch")
    summary["timings"] = clock.laps
    save_config(config, out)
    write_json_atomic(out / "round.json", summary)  # last: its presence marks the round as selected
    return summary


class Clock:
    """Wall seconds of a round's phases, for round.json (what grows with the pool, and what does not)."""

    def __init__(self):
        self.last, self.laps = time.perf_counter(), {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[f"{name}_s"] = round(now - self.last, 2)
        self.last = now


def short_batch_message(counts: dict, size: int, rule: Rule) -> str:
    """Why the batch is short: the step that left fewer candidates than the batch needs."""
    steps = [
        ("unjudged", "the pool has only {n} unjudged instances"),
        ("after_thresholds", "the p(H) band [{lo}, {hi}] leaves {n}"),
        ("after_paraphrase", "the paraphrase cut leaves {n}"),
        ("after_swaps", "the Date/Name drop leaves {n}"),
        ("after_rebalance", "Eq. 1 subsampling (R = {r}) leaves {n}"),
    ]
    why = next(
        (text for key, text in steps if key in counts and counts[key] < size), "too few candidates remain"
    ).format(n="{n}", lo=rule.p_low, hi=rule.p_high, r=rule.ratio)
    first_short = next((counts[k] for k, _ in steps if k in counts and counts[k] < size), counts.get("batch", 0))
    return f"only {counts.get('batch', 0)} candidates left for a batch of {size}: " + why.format(n=first_short)
