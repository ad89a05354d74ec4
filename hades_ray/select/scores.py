"""A round's p(H) of every pool instance, written by workers as ``round-K/scores/part-NNNNN.parquet``
(``id``, ``p_hallucination``, ``pred``) with ``scores/markers/`` last.

The detector's stages run on the pipeline executor (actor pools that load the detector once). Each
shard's marker also carries the p(H) histogram of its unjudged rows that pass every other filter
(paraphrase, Date/Name, Eq. 1): the driver sums these small histograms to place the p(H) band, so
no array of scores ever reaches it. A rerun of a crashed round rescores only the shards without a
marker from the same detector and rule.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa

from hades_ray.pipeline import storage
from hades_ray.pipeline.shards import Shard
from hades_ray.select import filters
from hades_ray.select.decide import Rule, decide
from hades_ray.select.feature_job import read_features
from hades_ray.select.passes import (
    iter_markers,
    per_shard,
    run_pass,
    todo_shards,
    with_shard_columns,
    write_empty_part,
    write_part,
)
from hades_ray.workdir import pool_dir, pool_shards, read_pool_part, round_dir

log = logging.getLogger(__name__)
SCORE_SCHEMA = pa.schema([("id", pa.string()), ("p_hallucination", pa.float64()), ("pred", pa.int8())])
RULE_COLUMNS = ["similarity", "orig_ent", "repl_ent"]


def scores_dir(workdir, round_index: int) -> str:
    return storage.join(str(round_dir(workdir, round_index)), "scores")


def scores_digest(detector_token: str, rule: Rule) -> str:
    fields = dataclasses.asdict(rule) | {"taken": sorted(rule.taken), "detector": detector_token}
    return hashlib.sha256(json.dumps(fields, sort_keys=True, default=list).encode()).hexdigest()[:16]


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
    return with_shard_columns(table, shard)


def _write(table: pa.Table, output: str, digest: str, rule: Rule) -> pa.Table:
    return per_shard(table, functools.partial(_write_one, output, digest, rule))


def _write_one(output: str, digest: str, rule: Rule, table: pa.Table) -> dict:
    d = decide(table, dataclasses.replace(rule, p_low=0.0, p_high=1.0))
    survives = d["unjudged"] & d["keep_paraphrase"] & d["keep_swap"] & d["keep_rebalance"]
    p = table.column("p_hallucination").to_numpy()
    extra = {"survivor_histogram": filters.histogram(p[survives]), "unjudged": int(d["unjudged"].sum())}
    return write_part(output, digest, table, SCORE_SCHEMA, extra)


def score_pool(config, workdir, round_index: int, stages: list, detector_token: str, rule: Rule, executor: str) -> dict:
    """Score every finished pool shard lacking scores from this detector; returns the summed
    survivor histogram (bin -> count) over all shards, reused ones included."""
    shards = pool_shards(pool_dir(workdir))
    output, digest = scores_dir(workdir, round_index), scores_digest(detector_token, rule)
    todo = todo_shards(output, shards, digest)
    for shard in [s for s in todo if s.rows == 0]:
        write_empty_part(output, digest, shard, SCORE_SCHEMA, {"survivor_histogram": {}, "unjudged": 0})
    todo = [s for s in todo if s.rows > 0]
    log.info("scoring %d of %d pool shards with the round's detector", len(todo), len(shards))
    read = functools.partial(
        read_with_features, str(workdir), pool_columns=("id", "words", "start", "end"), feature_columns=RULE_COLUMNS
    )
    write = functools.partial(_write, output=output, digest=digest, rule=rule)
    for marker in run_pass(todo, read, stages, write, executor, config.ray.check_resources):
        log.info("scores of pool shard %d written (%d rows)", marker["shard"], marker["rows"])
    return summed_histogram(output, {s.index for s in shards})


def summed_histogram(output: str, indices: set[int]) -> dict[int, int]:
    """The survivor histograms of the given shards' markers, read one marker at a time."""
    total: Counter = Counter()
    for marker in iter_markers(output):
        if marker["shard"] in indices:
            total.update({int(b): int(c) for b, c in marker.get("survivor_histogram", {}).items()})
    return dict(total)


def histogram_total(counts: dict[int, int]) -> int:
    return int(np.sum(list(counts.values()))) if counts else 0


def detector_token(model_dir: Path) -> str:
    """Identifies one trained detector (its weights' size and time), so scores from another are redone."""
    files = sorted(p for p in Path(model_dir).iterdir() if p.is_file())
    return hashlib.sha256(
        "|".join(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files).encode()
    ).hexdigest()[:16]
