"""The pool's features, computed once per pool shard and stored beside the work directory's rounds.

``WORKDIR/features/part-NNNNN.parquet`` holds one row per instance of pool shard NNNNN (keyed by
``id``), and ``WORKDIR/features/markers/part-NNNNN.json`` is written after it. A rerun computes only the
shards without a marker, or whose marker names other settings (encoder, pooling, windows, spaCy model)
or another version of the pool shard; a crash loses at most the shards in flight.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from hades_ray.pipeline import storage
from hades_ray.pipeline.lock import OutputLock
from hades_ray.pipeline.shards import Shard
from hades_ray.pipeline.storage import read_parquet
from hades_ray.select.features import FEATURE_SCHEMA, feature_stages
from hades_ray.select.passes import part_path, per_shard, run_pass, todo_shards, with_shard_columns, write_empty_part
from hades_ray.select.passes import write_part as _write_part
from hades_ray.workdir import pool_dir, pool_shards, read_pool_part

log = logging.getLogger(__name__)
FEATURES = "features"


def features_dir(workdir: str | Path) -> str:
    return storage.join(str(workdir), FEATURES)


def features_digest(config) -> str:
    """What the features depend on; resources and the later steps' settings are left out."""
    sel = config.select
    settings = {
        "encoder": config.models.encoder,
        "revision": config.models.revisions.get(config.models.encoder, ""),
        "pooling": sel.pooling_for(config.models.encoder),
        "paraphrase_context_words": sel.paraphrase_context_words,
        "ner_context_words": sel.ner_context_words,
        "spacy_model": config.spacy_model,
    }
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def _read(shard: Shard) -> pa.Table:
    return with_shard_columns(read_pool_part(shard), shard)


def _write(table: pa.Table, output: str, digest: str) -> pa.Table:
    return per_shard(table, functools.partial(_write_part, output, digest, columns=FEATURE_SCHEMA))


def ensure_features(config, workdir: str | Path, executor: str = "ray", force: bool = False) -> dict:
    """Compute the features of every finished pool shard that lacks them; returns what was done."""
    shards = pool_shards(pool_dir(workdir))
    output, digest = features_dir(workdir), features_digest(config)
    todo = todo_shards(output, shards, digest, force)
    for shard in [s for s in todo if s.rows == 0]:
        write_empty_part(output, digest, shard, FEATURE_SCHEMA)
    todo = [s for s in todo if s.rows > 0]
    if todo:
        log.info(
            "features: %d of %d pool shards to compute (encoder similarity, spaCy NER/POS)", len(todo), len(shards)
        )
        if executor == "ray":
            from hades_ray.ray_runtime import init_ray

            init_ray(config.ray.address, config.ray.num_cpus)
        write = functools.partial(_write, output=output, digest=digest)
        for marker in run_pass(todo, _read, feature_stages(config), write, executor, config.ray.check_resources):
            log.info("features of pool shard %d written (%d rows)", marker["shard"], marker["rows"])
    return {"shards": len(shards), "computed": len(todo), "reused": len(shards) - len(todo), "digest": digest}


def read_features(workdir: str | Path, index: int, columns: list[str] | None = None) -> pa.Table:
    return read_parquet(part_path(features_dir(workdir), index), columns)


def compute_features(
    config,
    workdir: str | Path,
    force: bool = False,
    ids=None,
    executor: str = "ray",
    columns: list[str] | None = None,
) -> pd.DataFrame:
    """The features of ``ids`` (default: the whole pool; meant for small pools and tests), computed
    first where missing. Reads part by part, keeping only the wanted rows."""
    with OutputLock(features_dir(workdir)):
        ensure_features(config, workdir, executor, force)
    wanted = pa.array(sorted({str(i) for i in ids}), pa.string()) if ids is not None else None
    frames = []
    for shard in pool_shards(pool_dir(workdir)):
        table = read_features(workdir, shard.index, columns)
        if wanted is not None:
            table = table.filter(pc.is_in(table.column("id"), value_set=wanted))
        frames.append(table)
    schema = FEATURE_SCHEMA if columns is None else pa.schema([FEATURE_SCHEMA.field(c) for c in columns])
    return (pa.concat_tables(frames) if frames else schema.empty_table()).to_pandas()
