"""Pools that a job needs from the start reach their size: on a cluster declaring 4 GPUs the paper
preset's 4 REPLACE and 4 RANK actors all start and all work, with a backlog of 16 shards."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster.test_jobs import ROOT, _env, _input

pytestmark = pytest.mark.ray


def test_every_actor_of_a_four_gpu_pool_does_work(micro_home, shared_data, tmp_path):
    output = tmp_path / "out"
    script = Path(__file__).parent / "gpu_pools.py"
    done = subprocess.run(
        [sys.executable, str(script), str(_input(shared_data, tmp_path, 32)), str(output)],
        env=_env(micro_home),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    verdict = json.loads([line for line in done.stdout.splitlines() if line.startswith("{")][-1])
    summary, actors = verdict["summary"], verdict["actors"]
    assert summary["shards"]["total"] == 16
    assert len(actors["replace"]) == 4, actors  # every REPLACE actor the preset asks for did work
    assert len(actors["rank"]) == 4, actors
    assert summary["timings"]["stage_actors"]["replace"] == 4
