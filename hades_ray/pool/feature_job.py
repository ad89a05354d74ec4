"""The pool's features, computed once per pool shard and shared by every round: a sharded job whose
parts are ``WORKDIR/features/part-NNNNN.parquet`` (one row per instance of pool shard NNNNN, keyed by
``id``). A later round computes only the pool's new shards; the settings digest covers the encoder, its
revision, pooling, the windows and the spaCy model.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from hades_ray.pipeline import storage
from hades_ray.pipeline.executor import Executor
from hades_ray.pipeline.job import ShardJob
from hades_ray.pipeline.shards import Shard
from hades_ray.pipeline.steps import digest_of
from hades_ray.pipeline.storage import read_parquet
from hades_ray.pool.features import FEATURE_SCHEMA, feature_stages
from hades_ray.pool.layout import part_path, pool_dir, write_part
from hades_ray.pool.readers import pool_shards, read_pool_part
from hades_ray.text.pipeline import text_settings

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
        **text_settings(config),
    }
    return digest_of(settings)


def features_job(config, workdir: str | Path, shards: list[Shard]) -> ShardJob:
    """The features of the pool shards ``shards`` (a round plans the pool once for all its passes)."""
    output = features_dir(workdir)
    return ShardJob(
        name="features",
        output=output,
        digest=features_digest(config),
        plan=lambda _mapper: shards,
        read=read_pool_part,
        stages=functools.partial(feature_stages, config),
        write=functools.partial(write_part, output, FEATURE_SCHEMA),
        summary_file=None,  # round.json records it; the folder stays a Parquet dataset of parts
        rows_verb="instances",
    )


def ensure_features(config, workdir: str | Path, executor: Executor, shards: list[Shard] | None = None) -> dict:
    """Compute the features of every finished pool shard that lacks them; returns what was done."""
    job = features_job(config, workdir, pool_shards(pool_dir(workdir)) if shards is None else shards)
    return feature_counts(job, executor.run(job))


def feature_counts(job: ShardJob, summary: dict) -> dict:
    """What a features run did, for round.json."""
    done = summary["shards"]
    return {
        "shards": done["processed_now"] + done["skipped_finished"],
        "computed": done["processed_now"],
        "reused": done["skipped_finished"],
        "digest": job.digest,
    }


def read_features(workdir: str | Path, index: int, columns: list[str] | None = None) -> pa.Table:
    return read_parquet(part_path(features_dir(workdir), index), columns)


def compute_features(
    config, workdir: str | Path, ids=None, columns: list[str] | None = None, executor: Executor | None = None
) -> pd.DataFrame:
    """The features of ``ids`` (default: the whole pool; meant for small pools and tests), computed
    first where missing (on Ray per the config unless ``executor`` says otherwise). Reads part by
    part, keeping only the wanted rows."""
    shards = pool_shards(pool_dir(workdir))
    ensure_features(config, workdir, executor or Executor.of(config.ray), shards)
    wanted = pa.array(sorted({str(i) for i in ids}), pa.string()) if ids is not None else None
    frames = []
    for shard in shards:
        table = read_features(workdir, shard.index, columns)
        if wanted is not None:
            table = table.filter(pc.is_in(table.column("id"), value_set=wanted))
        frames.append(table)
    schema = FEATURE_SCHEMA if columns is None else pa.schema([FEATURE_SCHEMA.field(c) for c in columns])
    return (pa.concat_tables(frames) if frames else schema.empty_table()).to_pandas()
