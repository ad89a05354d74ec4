"""One selection round (paper §3.3): score, filter, rebalance and sample the next batch for judges.

Round 0 samples the pool at random. Round K >= 1 trains a detector on the judgments of the rounds
before it (``select/detector.py``), has workers write p(H) of every pool instance (``select/scores.py``),
places the p(H) band from the histograms in their markers, and then runs the selection pass
(``select/candidates.py``): the paraphrase cut, the Date/Name swap drop (a Date or Name replaced by any
Date or Name) and Eq. 1 subsampling as per-row seeded decisions, and the batch drawn as the smallest
seeded sample keys. The model-free filters apply in every round, round 0 included.

The round is a step (``hades_ray/pipeline/steps.py``) over its passes, which run in ``_select`` in
order: features, scores and candidates are sharded jobs on the round's ``Executor``, the detector's fit
is a step. A rerun resumes each where it stopped; a selected round is returned as recorded. Other
settings stop the round naming what they would redo, unless ``--force``; a round whose batch has
judgments is never redone.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from hades_ray.config import recorded_language, save_config
from hades_ray.errors import UserError
from hades_ray.pipeline.executor import Executor
from hades_ray.pipeline.laps import Laps
from hades_ray.pipeline.lock import OutputLock
from hades_ray.pipeline.shards import finished_shards
from hades_ray.pipeline.steps import Step, digest_of, run_step
from hades_ray.pipeline.storage import write_json_atomic
from hades_ray.pool.feature_job import feature_counts, features_job
from hades_ray.pool.labels import consensus_items
from hades_ray.pool.layout import existing_rounds, pool_dir, round_dir, set_pool
from hades_ray.pool.readers import pool_shards
from hades_ray.select import filters
from hades_ray.select.batch import chosen_rows, write_batch
from hades_ray.select.candidates import batch_keys, candidates_dir, candidates_job
from hades_ray.select.decide import Rule, rule_for
from hades_ray.select.detector import detector_step, record_detector, too_few
from hades_ray.select.ratio import explain_ratio
from hades_ray.select.schedule import round_size
from hades_ray.select.scores import detector_scores_job, histogram_total
from hades_ray.text.languages import Language
from hades_ray.text.pipeline import entity_labels, resolve_pipeline_name

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


def run_round(
    config, workdir: str | Path, round_index: int, pool: str | None = None, executor: Executor | None = None
) -> dict:
    """Select round ``round_index``'s batch; writes batch.jsonl, candidates/, scores/ and round.json.
    ``executor`` runs its passes (default: on Ray per the config, finished work kept)."""
    workdir = Path(workdir)
    if pool:
        set_pool(workdir, pool)
    missing = [k for k in range(round_index) if k not in existing_rounds(workdir)]
    if missing:
        raise FileNotFoundError(f"round {round_index} needs rounds {missing} first")
    executor = executor or Executor.of(config.ray)
    with OutputLock(workdir):
        return run_step(round_step(config, workdir, round_index, executor), executor.force)


def round_step(config, workdir: Path, round_index: int, executor: Executor) -> Step:
    """The round declared: what it reads (the pool, earlier batches and judgments), its settings, and its passes."""
    out = round_dir(workdir, round_index)
    older = (out / "round.json").is_file() and not finished_shards(out)  # selected before rounds were steps
    if older or executor.force and any((out / "judgments").glob("import-*")):
        raise FileExistsError(
            f"round {round_index} was already selected ({out / 'round.json'}) and its batch may be judged; "
            "rounds are never overwritten: start the next round or a new work directory"
        )
    pool = pool_dir(workdir)
    found = recorded_language(pool)
    if found.name != config.language:  # words are joined, tagged and judged the pool's language's way (auto too)
        raise UserError(
            f"the pool {pool} is in language {found.name} (its config.resolved.yaml) but this run's language is "
            f"{config.language}: give --language {found.name}"
        )
    shards = pool_shards(pool)  # one plan of the pool for every pass of the round
    taken = assigned_ids(workdir, round_index)
    labeled = consensus_items(config, workdir, list(range(round_index))) if round_index else []
    features = features_job(config, workdir, shards)
    sel = config.select
    random = too_few(labeled, round_index, sel.min_train_instances) if round_index else ""
    trains = round_index and not random
    detector = (
        detector_step(config, workdir, round_index, labeled, executor.force, executor=executor, shards=shards)
        if trains
        else None
    )
    passes = Round(
        select=sel,
        detect=config.detect,
        save_config=functools.partial(save_config, config),
        workdir=workdir,
        index=round_index,
        size=round_size(sel, round_index),
        rule=rule_for(sel, config.seed, round_index, taken),
        taken=len(taken),
        features=features,
        detector=detector,
        random=random,
        judged=len(labeled),
        shards=shards,
        executor=executor,
        language=config.lang,
        unlabeled=_unlabeled_swaps(config),
    )
    band = (sel.candidate_target, sel.p_low, sel.p_high, sel.score_num_gpus)
    settings = digest_of([features.digest, passes.rule.digest(), passes.size, band, random])
    inputs = digest_of([[s.fingerprint("") for s in shards], detector.inputs if detector else ""])
    digest = digest_of([settings, detector.digest if detector else ""])
    return Step(f"round {round_index}", str(out), digest, functools.partial(_select, passes), inputs)


@dataclasses.dataclass
class Round:
    """A round's passes and what they share, fixed before the first one runs."""

    select: object  # the config's sections the passes read, and how the resolved config is written
    detect: object
    save_config: Callable[[Path], None]
    workdir: Path
    index: int
    size: int
    rule: Rule
    taken: int
    features: object  # the features job
    detector: Step | None  # None: round 0, or too few judgments (``random`` says why)
    random: str
    judged: int
    shards: list
    executor: Executor
    language: Language  # the pool's: how the batch's words are joined for judges, and its records' field
    unlabeled: str = ""  # what the Date/Name drop cannot do with this language's pipeline, said once a round


def _unlabeled_swaps(config) -> str:
    """The round's one line on the swap types its spaCy pipeline never labels ("" when it labels them all)."""
    pipeline = resolve_pipeline_name(config.lang, config.spacy_model)
    labels = entity_labels(config.lang, config.spacy_model)
    return filters.unlabeled_swap_message(config.lang.name, pipeline, labels, config.select.swap_entity_types)


def _select(r: Round) -> dict:
    """The passes in order: features, the detector, scores and the band, candidates, the batch."""
    summary: dict = {"round": r.index, "batch_size_target": r.size, "counts": {}, "messages": []}
    clock = Laps(digits=2)  # round.json keeps the phases to 0.01 s
    if r.unlabeled:
        log.warning(r.unlabeled)
        summary["messages"].append(r.unlabeled)
    summary["features"] = feature_counts(r.features, r.executor.run(r.features))
    clock.lap("features_s")
    if r.index:
        summary["counts"]["judged_before"] = r.judged
    if r.random:
        log.warning(r.random)
        summary["messages"].append(r.random)
    trained = run_step(r.detector, r.executor.force) if r.detector else None
    if trained:
        record_detector(summary, trained)
    clock.lap("detector_s")
    rule, scores = r.rule, ""
    if trained:
        rule = _with_ratio(rule, summary)
        job = _scores(r, Path(trained["model_dir"]), rule)
        rule, scores = _band(r, rule, r.executor.run(job)["survivor_histogram"], summary), job.digest
    clock.lap("scores_s")
    decided = r.executor.run(candidates_job(r.workdir, r.index, r.shards, rule, r.size, r.features.digest, scores))
    chosen = batch_keys(candidates_dir(r.workdir, r.index), r.size)
    clock.lap("selection_pass_s")
    counts = {**summary["counts"], **Counter(decided["counts"]), "assigned_before": r.taken, "batch": len(chosen)}
    summary["counts"] = {k: int(counts[k]) for k in COUNT_ORDER if k in counts}
    summary["batch_sample_key_max"] = chosen[-1][0] if chosen else None
    if len(chosen) < r.size:
        summary["messages"].append(short_batch_message(summary["counts"], r.size, rule))
    out = round_dir(r.workdir, r.index)
    write_batch(r.workdir, chosen_rows(r.workdir, chosen), out / "batch.jsonl", r.language)
    clock.lap("batch_s")
    summary["timings"] = clock.laps
    r.save_config(out)
    write_json_atomic(out / "round.json", summary)
    return summary


def _with_ratio(rule: Rule, summary: dict) -> Rule:
    """Eq. 1's R from the calibration rates (round.json says when it is undefined or clipped)."""
    rates = summary["rates"]
    ratio = explain_ratio(rates["alpha"], rates["beta"], rates["gamma"])
    summary["ratio"] = {"R": ratio.value, "raw": ratio.raw, "message": ratio.message}
    if ratio.message:
        summary["messages"].append(ratio.message)
        log.warning(ratio.message)
    return dataclasses.replace(rule, ratio=ratio.value)


def _scores(r: Round, model_dir: Path, rule: Rule):
    """The scores job of the round's detector; its stages (the detector's actors) are built when there is work."""
    return detector_scores_job(r.workdir, r.index, r.shards, model_dir, r.detect, r.select.score_num_gpus, rule,
                               r.executor)  # fmt: skip


def _band(r: Round, rule: Rule, histogram: dict[int, int], summary: dict) -> Rule:
    """The p(H) band placed on the pool's survivor histogram so that the candidate target is met
    after every filter (R included)."""
    sel, size = r.select, r.size
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
