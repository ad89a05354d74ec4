"""A round's p(H) of every pool instance, by the round detector's stages: ``round-K/scores/part-NNNNN.parquet``
(``id``, ``p_hallucination``, ``pred``), its digest the detector's identity and the round's rule.

Each shard's writer returns the p(H) histogram of its unjudged rows that pass every other filter
(paraphrase, Date/Name, Eq. 1); the summed histograms place the p(H) band, so no array of scores ever
reaches the driver.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from hades_ray.pipeline import storage
from hades_ray.pipeline.job import ShardJob
from hades_ray.pipeline.shards import Shard
from hades_ray.pipeline.stage import Stage
from hades_ray.pool.feature_job import read_features
from hades_ray.pool.layout import part_path, round_dir, write_part
from hades_ray.pool.readers import read_pool_part
from hades_ray.select import filters
from hades_ray.select.decide import Rule, decide

SCORE_SCHEMA = pa.schema([("id", pa.string()), ("p_hallucination", pa.float64()), ("pred", pa.int8())])
RULE_COLUMNS = ["similarity", "orig_ent", "repl_ent"]


def scores_dir(workdir, round_index: int) -> str:
    return storage.join(str(round_dir(workdir, round_index)), "scores")


def read_with_features(
    workdir: str, shard: Shard, pool_columns: tuple[str, ...], feature_columns: list[str]
) -> pa.Table:
    """A pool shard's instances with their stored features (the same rows, in the same order)."""
    table = read_pool_part(shard, pool_columns)
    features = read_features(workdir, shard.index, ["id", *feature_columns])
    if not features.column("id").equals(table.column("id")):
        raise RuntimeError(
            f"{workdir}/features part {shard.index} does not match pool shard {shard.index}; "
            "delete WORKDIR/features to recompute it"
        )
    for name in feature_columns:
        table = table.append_column(name, features.column(name))
    return table


def write_scores(output: str, rule: Rule, index: int, table: pa.Table) -> dict:
    """A worker's writer: the shard's scores part, and its stats for the marker (the survivor histogram)."""
    d = decide(table, dataclasses.replace(rule, p_low=0.0, p_high=1.0))
    survives = d["unjudged"] & d["keep_paraphrase"] & d["keep_swap"] & d["keep_rebalance"]
    p = table.column("p_hallucination").to_numpy()
    write_part(output, SCORE_SCHEMA, index, table)
    return {"survivor_histogram": filters.histogram(p[survives]), "unjudged": int(d["unjudged"].sum())}


def scores_job(
    workdir, round_index: int, shards: list[Shard], stages: Callable[[], list[Stage]], identity: str, rule: Rule
) -> ShardJob:
    """p(H) of the pool shards ``shards`` by the detector whose ``stages`` are built when there is work
    (``identity``: ``Detector.identity``)."""
    output = scores_dir(workdir, round_index)
    return ShardJob(
        name="scores",
        output=output,
        digest=rule.digest(detector=identity),
        plan=lambda _mapper: shards,
        read=functools.partial(
            read_with_features, str(workdir), pool_columns=("id", "words", "start", "end"), feature_columns=RULE_COLUMNS
        ),
        stages=stages,
        write=functools.partial(write_scores, output, rule),
        summarize=survivor_histogram,
        summary_file=None,  # round.json records the band; the folder stays a Parquet dataset of parts
        rows_verb="instances",
    )


def detector_scores_job(workdir, round_index: int, shards: list[Shard], model_dir, detect, num_gpus: float,
                        rule: Rule, executor) -> ShardJob:  # fmt: skip
    """The scores job of the round detector in ``model_dir``. What a frozen model computes for the pool (a
    frozen span classifier's span vectors, a feature detector's MLM and spaCy features) comes from the
    pool's store (``hades_ray/detect/reps.py``: made by the first round that needed it, by ``executor``
    where missing), so no backbone forward runs in any later round; otherwise the detector's stages (its
    actors, ``num_gpus`` each) run over the pool."""
    from hades_ray.detect.detector import Detector
    from hades_ray.detect.reps import pool_store, stored_scoring

    detector = Detector.open(model_dir)
    job = scores_job(workdir, round_index, shards, functools.partial(detector.stages, detect, num_gpus=num_gpus),
                     detector.identity(), rule)  # fmt: skip
    view = detector.store_view(detect)
    if view is None:
        return job
    store = pool_store(workdir, shards, view, detect, executor, num_gpus)
    columns, stages = stored_scoring(detector, view)
    read = functools.partial(read_with_stored, store.folder, columns, job.read)
    return dataclasses.replace(job, read=read, stages=functools.partial(list, stages))


def read_with_stored(store: str, columns: dict[str, str], read: Callable[[Shard], pa.Table], shard: Shard) -> pa.Table:
    """``read``'s rows of a pool shard with ``columns`` from the pool's store: its part k is pool shard k's."""
    from hades_ray.detect.reps import PARTS, take_columns

    table = read(shard)
    part = storage.read_parquet(part_path(storage.join(store, PARTS), shard.index), ["id", *columns])
    return take_columns(table, part, "id", columns, f"{store} part {shard.index}")


def survivor_histogram(merged: dict) -> dict:
    """The summary of a scores job: the survivor histograms of every shard, reused ones included,
    summed (bin -> count)."""
    return {"survivor_histogram": {int(b): int(c) for b, c in merged.get("survivor_histogram", {}).items()}}


def histogram_total(counts: dict[int, int]) -> int:
    return int(np.sum(list(counts.values()))) if counts else 0
