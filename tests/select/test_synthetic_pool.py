"""The synthetic pool of selection at scale (hades_ray/pool/synthetic.py): the job's layout, seeded by shard,
and its features stored as the features job stores them, so that a round does not compute them again."""

from __future__ import annotations

from hades_ray.pool.synthetic import synthetic_shard, write_synthetic_pool


def test_a_shard_is_seeded_by_its_index_and_replaces_one_word():
    instances, features = synthetic_shard(2, 5, shard_rows=5)
    assert (instances, features) == synthetic_shard(2, 5, shard_rows=5)
    ids = ["doc2#2", "doc2#3", "doc3#0", "doc3#1", "doc3#2"]
    assert [i["id"] for i in instances] == [f["id"] for f in features] == ids
    for instance, feature in zip(instances, features):
        assert len(instance["words"]) == 24 and instance["words"][instance["start"]] == instance["replacement"]
        assert feature["orig_lemma"] == instance["original_span"] and 0 <= feature["similarity"] <= 1


def test_a_written_pool_reads_back_with_its_features_finished(tmp_path):
    from hades_ray.config import load_config
    from hades_ray.pipeline.executor import Executor
    from hades_ray.pool.feature_job import ensure_features, read_features
    from hades_ray.pool.readers import pool_shards

    config = load_config("local")
    write_synthetic_pool(config, tmp_path, 25, shard_rows=10)
    shards = pool_shards(str(tmp_path / "pool"))
    assert [s.rows for s in shards] == [10, 10, 5]
    assert read_features(tmp_path, 2).num_rows == 5
    summary = ensure_features(config, tmp_path, Executor(kind="local"), shards)
    assert (summary["computed"], summary["reused"]) == (0, 3), summary
