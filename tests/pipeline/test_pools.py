"""Pools sized to the cluster before work starts (Ray's actor autoscaler did not grow them), and the
perturbation job's automatic shard size."""

from hades_ray.config import load_config
from hades_ray.perturb.stages import perturb_stages
from hades_ray.pipeline.pools import pool_sizes


def _nodes(*resources: dict) -> list[dict]:
    return [{"Alive": True, "Resources": r} for r in resources]


def _sizes(preset: str, nodes: list[dict], blocks: int = 100, *overrides: str) -> dict:
    stages = perturb_stages(load_config(preset, overrides=list(overrides)))
    return {s.name: n for s, n in zip(stages, pool_sizes(stages, nodes, blocks))}


def test_the_local_preset_starts_both_replace_actors_on_two_cpus():
    laptop = _nodes({"CPU": 2.0})
    assert _sizes("local", laptop) == {"prepare": 1, "replace": 2, "assemble": 1, "rank": 1}
    # RANK at half a CPU (the preset before issue 17) leaves no room for the second REPLACE actor.
    assert _sizes("local", laptop, 100, "perturb.resources.rank.num_cpus=0.5")["replace"] == 1


def test_the_paper_preset_fills_four_gpu_workers():
    # cluster/rayjob-perturb.yaml: a 4-CPU head and 4 workers of 8 CPUs and one GPU each.
    cluster = _nodes({"CPU": 4.0}, *[{"CPU": 8.0, "GPU": 1.0}] * 4)
    assert _sizes("paper", cluster) == {"prepare": 8, "replace": 4, "assemble": 8, "rank": 4}
    # Fewer GPUs: the GPU pools shrink to what fits, never below their minimum.
    assert _sizes("paper", cluster[:3])["replace"] == 2


def test_no_pool_starts_more_actors_than_there_are_blocks():
    assert set(_sizes("paper", _nodes({"CPU": 64.0, "GPU": 8.0}), 1).values()) == {1}
    assert _sizes("local", _nodes({"CPU": 2.0}), 3)["replace"] == 2


def test_auto_shard_size_gives_the_widest_pool_four_blocks_per_actor_within_floor_and_ceiling():
    local, paper = load_config("local").perturb, load_config("paper").perturb
    assert local.read.shard_size == "auto"
    assert local.shard_rows(200) == 25  # 8 shards for 2 REPLACE actors
    assert local.shard_rows(10) == 16  # floor: no shard of a handful of rows
    assert paper.shard_rows(1_000_000) == 1_000  # ceiling: a shard's block stays small
    assert load_config("local", overrides=["perturb.read.shard_size=6"]).perturb.shard_rows(200) == 6
