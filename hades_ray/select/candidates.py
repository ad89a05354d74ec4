"""The selection pass: a sharded job whose workers decide every pool shard's rows and write its
unjudged rows with their decisions as ``round-K/candidates/part-NNNNN.parquet``.

Each shard's writer returns its counts and the ``size`` alive rows with the smallest sample keys,
which its marker records; ``batch_keys`` reads the markers one at a time and merges their short lists,
so the batch is the global bottom-``size`` by key, and the driver holds O(shards + size) whatever the
pool's size. A row is in the batch exactly when it is alive and its ``sample_key`` is at most
round.json's ``batch_sample_key_max``. The digest covers the rule (band, Eq. 1's R, earlier batches,
seeds), the batch size, the features' settings and, from round 1, the scores' digest.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa

from hades_ray.pipeline import storage
from hades_ray.pipeline.job import ShardJob
from hades_ray.pipeline.shards import Shard, iter_markers
from hades_ray.pipeline.stage import Resources
from hades_ray.pipeline.storage import read_parquet
from hades_ray.pool.features import FEATURE_SCHEMA
from hades_ray.pool.layout import part_path, round_dir, write_part
from hades_ray.pool.schemas import INSTANCE_SCHEMA
from hades_ray.select import filters
from hades_ray.select.decide import DECISIONS, DecideStage, Rule, shard_counts
from hades_ray.select.scores import SCORE_SCHEMA, read_with_features, scores_dir

POOL_PART = ("id", "doc_id", "start", "end", "replacement", "original_span")
FEATURE_COLUMNS = [f.name for f in FEATURE_SCHEMA if f.name not in ("id", "doc_id")]


def candidates_dir(workdir, round_index: int) -> str:
    return storage.join(str(round_dir(workdir, round_index)), "candidates")


def candidate_schema(scored: bool) -> pa.Schema:
    fields = [INSTANCE_SCHEMA.field(name) for name in POOL_PART]
    fields += [f for f in FEATURE_SCHEMA if f.name in FEATURE_COLUMNS]
    fields += [f for f in SCORE_SCHEMA if f.name != "id"] if scored else []
    fields += [pa.field(name, kind) for name, kind in DECISIONS.items() if name not in ("unjudged", "alive")]
    return pa.schema(fields)


def read_for_selection(workdir: str, round_index: int, scored: bool, shard: Shard) -> pa.Table:
    table = read_with_features(workdir, shard, POOL_PART, FEATURE_COLUMNS)
    if scored:
        scores = read_parquet(part_path(scores_dir(workdir, round_index), shard.index))
        if not scores.column("id").equals(table.column("id")):
            raise RuntimeError(f"scores part {shard.index} of round {round_index} does not match its pool shard")
        table = table.append_column("p_hallucination", scores.column("p_hallucination"))
        table = table.append_column("pred", scores.column("pred"))
    return table


def write_candidates(output: str, rule: Rule, size: int, index: int, table: pa.Table) -> dict:
    """A worker's writer: the shard's unjudged rows as its part; its counts and ``size`` smallest
    (key, id, shard) of its alive rows for the marker."""
    decided = {name: table.column(name).to_numpy(zero_copy_only=False) for name in DECISIONS}
    write_part(output, candidate_schema(rule.scored), index, table.filter(pa.array(decided["unjudged"])))
    alive = np.flatnonzero(decided["alive"])
    keys, ids = decided["sample_key"][alive], table.column("id").take(pa.array(alive)).to_pylist()
    smallest = filters.smallest(((float(k), i, index) for k, i in zip(keys, ids)), size)
    return {"counts": shard_counts(table, decided, rule), "smallest": smallest}


def candidates_job(
    workdir, round_index: int, shards: list[Shard], rule: Rule, size: int, features: str, scores: str = ""
) -> ShardJob:
    """Decide the pool shards ``shards`` by ``rule``; ``features``, ``scores``: the digests of what it reads."""
    output = candidates_dir(workdir, round_index)
    stage = DecideStage(Resources(num_cpus=0.25, batch_size=100_000, uses_actors=False), rule)
    return ShardJob(
        name="candidates",
        output=output,
        digest=rule.digest(features=features, scores=scores, size=size),
        plan=lambda _mapper: shards,
        read=functools.partial(read_for_selection, str(workdir), round_index, rule.scored),
        stages=lambda: [stage],
        write=functools.partial(write_candidates, output, rule, size),
        summarize=lambda merged: {"counts": merged.get("counts", {})},
        summary_file=None,  # round.json records the counts; the folder stays a Parquet dataset of parts
        rows_verb="instances",
    )


def batch_keys(output: str, size: int) -> list[tuple[float, str, int]]:
    """The global ``size`` smallest (key, id, shard) over every shard's marker, holding O(size) at a time."""
    best: list[tuple[float, str, int]] = []
    for marker in iter_markers(output):
        best = filters.smallest([*best, *(tuple(t) for t in marker.get("smallest", []))], size)
    return best
