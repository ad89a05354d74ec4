"""The selection pass: every pool shard's unjudged rows with their decisions, written by workers as
``round-K/candidates/part-NNNNN.parquet`` (then ``candidates/markers/``).

Each worker returns its shard's counts and the ``size`` alive rows with the smallest sample keys;
the driver sums the counts and merges the short lists, so the batch is the global bottom-``size`` by
key without the pool ever passing through the driver. A row is in the batch exactly when it is alive
and its ``sample_key`` is at most round.json's ``batch_sample_key_max``.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from hades_ray.pipeline import storage
from hades_ray.pipeline.shards import Shard
from hades_ray.pipeline.stage import Resources
from hades_ray.pipeline.storage import read_parquet
from hades_ray.select import filters
from hades_ray.select.decide import DECISIONS, DecideStage, Rule, shard_counts
from hades_ray.select.feature_job import FEATURE_SCHEMA, features_digest
from hades_ray.select.passes import part_path, per_shard, run_pass, write_empty_part, write_part
from hades_ray.select.scores import SCORE_SCHEMA, read_with_features, scores_dir
from hades_ray.workdir import round_dir

POOL_PART = ("id", "doc_id", "start", "end", "replacement", "original_span")
FEATURE_COLUMNS = [f.name for f in FEATURE_SCHEMA if f.name not in ("id", "doc_id")]


def candidates_dir(workdir, round_index: int) -> str:
    return storage.join(str(round_dir(workdir, round_index)), "candidates")


def candidate_schema(scored: bool) -> pa.Schema:
    fields = [
        ("id", pa.string()),
        ("doc_id", pa.string()),
        ("start", pa.int32()),
        ("end", pa.int32()),
        ("replacement", pa.string()),
        ("original_span", pa.string()),
    ]
    fields += [(f.name, f.type) for f in FEATURE_SCHEMA if f.name in FEATURE_COLUMNS]
    fields += [(f.name, f.type) for f in SCORE_SCHEMA if f.name != "id"] if scored else []
    fields += [(name, kind) for name, kind in DECISIONS.items() if name not in ("unjudged", "alive")]
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


def _write(table: pa.Table, output: str, digest: str, rule: Rule, size: int) -> pa.Table:
    return per_shard(table, functools.partial(_write_one, output, digest, rule, size))


def _write_one(output: str, digest: str, rule: Rule, size: int, table: pa.Table) -> dict:
    decided = {name: table.column(name).to_numpy(zero_copy_only=False) for name in DECISIONS}
    counts = shard_counts(table, decided, rule)
    unjudged = table.filter(pa.array(decided["unjudged"]))
    marker = write_part(output, digest, unjudged, candidate_schema(rule.scored), {"counts": counts}, like=table)
    alive = np.flatnonzero(decided["alive"])
    keys, ids = decided["sample_key"][alive], table.column("id").take(pa.array(alive)).to_pylist()
    marker["smallest"] = filters.smallest(((float(k), i, marker["shard"]) for k, i in zip(keys, ids)), size)
    return marker  # "smallest" goes back to the driver only: the marker file is already written


def select_pass(
    config, workdir, round_index: int, shards: list[Shard], rule: Rule, size: int, executor: str
) -> Iterator[dict]:
    """Decide every shard; yields each shard's marker with its counts and its ``size`` smallest keys."""
    output = candidates_dir(workdir, round_index)
    digest = features_digest(config)
    for shard in [s for s in shards if s.rows == 0]:
        yield {**write_empty_part(output, digest, shard, candidate_schema(rule.scored)), "counts": {}, "smallest": []}
    todo = [s for s in shards if s.rows > 0]
    read = functools.partial(read_for_selection, str(workdir), round_index, rule.scored)
    write = functools.partial(_write, output=output, digest=digest, rule=rule, size=size)
    stage = DecideStage(Resources(num_cpus=0.25, batch_size=100_000, uses_actors=False), rule)
    yield from run_pass(todo, read, [stage], write, executor, config.ray.check_resources)


def merge(markers: Iterator[dict], size: int) -> tuple[Counter, list[tuple[float, str, int]]]:
    """Summed counts and the global ``size`` smallest (key, id, shard), holding O(size) at a time."""
    counts: Counter = Counter()
    best: list[tuple[float, str, int]] = []
    for marker in markers:
        counts.update(marker.get("counts", {}))
        best = filters.smallest([*best, *(tuple(t) for t in marker["smallest"])], size)
    return counts, best
