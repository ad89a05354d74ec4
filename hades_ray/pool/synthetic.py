"""A synthetic pool at any size, in the perturbation job's layout (``pool/instances/part-NNNNN.parquet`` and
their markers) with its features stored in advance as the features job stores them (its parts and markers,
so a round skips that job): what selection at scale is measured on (jobs/bench_scale_select.py), where
spaCy over a million windows would not fit the machine. Texts are 24 words of a 500-word vocabulary, one
word replaced; every figure is seeded by the shard."""

from __future__ import annotations

from pathlib import Path

VOCAB = [f"w{k}" for k in range(500)]


def synthetic_shard(index: int, count: int, shard_rows: int) -> tuple[list[dict], list[dict]]:
    """(instances, features) of pool shard ``index``: ``count`` rows, ids from ``index * shard_rows``."""
    import numpy as np

    rng = np.random.default_rng(index)
    instances, features = [], []
    for k in range(count):
        row = index * shard_rows + k
        words = [VOCAB[i] for i in rng.integers(0, len(VOCAB), 24)]
        start = int(rng.integers(3, 21))
        original, words[start] = words[start], VOCAB[int(rng.integers(0, len(VOCAB)))]
        doc, ent = f"doc{row // 4}", ["", "", "DATE", "PERSON", "GPE"][int(rng.integers(0, 5))]
        key = {"id": f"{doc}#{row % 4}", "doc_id": doc}
        instances.append(key | {"words": words, "start": start, "end": start, "replacement": words[start],
                                "original_span": original, "ner": ent, "pos": "NOUN", "hallucination": -1})  # fmt: skip
        features.append(key | {"similarity": float(rng.uniform(0.0, 1.0)), "orig_ent": ent,
                               "repl_ent": ent if rng.uniform() < 0.5 else "", "orig_pos": "NOUN", "repl_pos": "NOUN",
                               "orig_lemma": original, "repl_lemma": words[start]})  # fmt: skip
    return instances, features


def write_synthetic_pool(config, workdir: str | Path, size: int, shard_rows: int = 10_000) -> None:
    """``size`` instances in ``workdir``'s pool, shards of ``shard_rows``, with their features for ``config``."""
    import pyarrow as pa

    from hades_ray.pipeline.shards import part_name, write_marker
    from hades_ray.pipeline.storage import write_table
    from hades_ray.pool.feature_job import FEATURE_SCHEMA, features_digest, features_dir
    from hades_ray.pool.layout import part_path
    from hades_ray.pool.readers import pool_shards
    from hades_ray.pool.schemas import INSTANCE_SCHEMA

    digest, pool, features = features_digest(config), Path(workdir) / "pool", {}
    for index in range((size + shard_rows - 1) // shard_rows):
        count = min(shard_rows, size - index * shard_rows)
        instances, features[index] = synthetic_shard(index, count, shard_rows)
        write_table(
            str(pool / "instances" / f"{part_name(index)}.parquet"), pa.Table.from_pylist(instances, INSTANCE_SCHEMA)
        )
        write_marker(str(pool), index, {"shard": index, "counts": {"instances": count}, "fingerprint": f"bench{index}"})
    for shard in pool_shards(str(pool)):
        write_table(
            part_path(features_dir(workdir), shard.index), pa.Table.from_pylist(features[shard.index], FEATURE_SCHEMA)
        )
        marker = {"shard": shard.index, "digest": digest, "fingerprint": shard.fingerprint(digest), "rows": shard.rows}
        write_marker(features_dir(workdir), shard.index, marker)


def write_merged_pool(workdir: str | Path, size: int, shard_rows: int, meta: dict) -> None:
    """The same pool in the layout before the pool was a dataset (commit 52952ae): one merged
    ``pool/instances.jsonl`` (the replaced word marked ``===w===`` in ``replaced``) and one
    ``features/features.parquet`` with ``meta`` (that code's own marker contents) beside it."""
    import json

    import pandas as pd

    from hades_ray.pipeline import storage

    workdir, frames = Path(workdir), []
    with storage.open_atomic(workdir / "pool" / "instances.jsonl", "w") as handle:
        for index in range((size + shard_rows - 1) // shard_rows):
            instances, features = synthetic_shard(index, min(shard_rows, size - index * shard_rows), shard_rows)
            for r in instances:
                words = list(r["words"])
                words[r["start"]] = f"==={words[r['start']]}==="
                record = {"replaced": " ".join(words), "replaced_ids": [r["start"], r["end"]], "hallucination": -1}
                record |= {k: r[k] for k in ("id", "doc_id", "original_span", "replacement")}
                handle.write(json.dumps(record) + "\n")
            frames.append(pd.DataFrame(features).drop(columns=["repl_pos"]))
    with storage.open_atomic(workdir / "features" / "features.parquet", "wb") as handle:
        pd.concat(frames).to_parquet(handle, index=False)
    storage.write(workdir / "features" / "features.json", json.dumps(meta))
