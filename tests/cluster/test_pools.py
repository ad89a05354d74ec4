"""Pools that a job needs from the start reach their size: on a cluster declaring 4 GPUs the paper
preset's 4 REPLACE and 4 RANK actors all start and all work, with a backlog of 16 shards."""

import pytest

from tests.cluster.test_jobs import run_cluster_script

pytestmark = [pytest.mark.ray, pytest.mark.cluster]


def test_every_actor_of_a_four_gpu_pool_does_work(micro_home, shared_data, tmp_path):
    verdict, _ = run_cluster_script("gpu_pools.py", micro_home, shared_data, tmp_path, 32, timeout=600)
    summary, actors = verdict["summary"], verdict["actors"]
    assert summary["shards"]["total"] == 16
    assert len(actors["replace"]) == 4, actors  # every REPLACE actor the preset asks for did work
    assert len(actors["rank"]) == 4, actors
    assert summary["timings"]["stage_actors"]["replace"] == 4
