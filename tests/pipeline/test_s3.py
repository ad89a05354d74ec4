"""The perturbation job on an object store: input read from s3:// and output written there, by the
workers, on a local S3-compatible server (moto) on 127.0.0.1. The job is killed mid-run and resumed;
every row comes out exactly once. The killed run is a driver process of its own (it has to die by
SIGKILL) joined to the test run's Ray cluster, as ``RAY_ADDRESS=... hades-ray perturb`` joins a running
one; the resumed run is in-process (``--executor local``), in this process."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from hades_ray.cli import main
from hades_ray.pipeline import storage

pytest.importorskip("moto")
BIN = Path(sys.executable).parent
ROWS = 10


def _args(output: str, executor: str) -> list[str]:
    args = ["perturb", "--input", "s3://hades/in/leads.jsonl", "--output", output, "--executor", executor]
    return args + ["--set", "perturb.rank.num_candidates=2", "--set", "perturb.read.shard_size=2"]


def _job(micro_home, s3, output, address: str):
    env = dict(os.environ, HADES_RAY_HOME=str(micro_home), PYTHONUNBUFFERED="1", RAY_ADDRESS=address, **s3)
    args = [str(BIN / "hades-ray"), *_args(output, "ray")]
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)


@pytest.mark.slow
def test_s3_round_trip_killed_and_resumed(micro_home, shared_data, s3, ray_local):
    lines = (shared_data / "enwiki2015_first_paragraphs.jsonl").read_text(encoding="utf-8").splitlines()[:ROWS]
    storage.write("s3://hades/in/leads.jsonl", "\n".join(lines) + "\n")
    output = "s3://hades/out/pool"
    first = _job(micro_home, s3, output, ray_local.get_runtime_context().gcs_address)
    deadline = time.time() + 600
    while not storage.list_files(f"{output}/_markers") and time.time() < deadline and first.poll() is None:
        time.sleep(0.1)
    finished_before_kill = len(storage.list_files(f"{output}/_markers"))
    assert first.poll() is None, first.stdout.read().decode()[-3000:]  # still running when killed
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=60)
    assert 0 < finished_before_kill < ROWS // 2  # killed mid-run: some of the 5 shards (2 rows each) finished, not all
    storage.delete(f"{output}/_lock.json")  # a killed run on another host would leave it: clear it as a user would
    assert main(_args(output, "local")) == 0  # resumed in-process (micro_home and s3 set this process's env)
    summary = json.loads(storage.read_text(f"{output}/summary.json"))
    assert summary["read"] == ROWS
    assert summary["shards"]["skipped_finished"] >= finished_before_kill
    doc_ids = []
    for part in storage.list_files(f"{output}/pool", (".parquet",)):
        fs, inner = storage.resolve(part)
        doc_ids += pq.read_table(inner, filesystem=fs)["doc_id"].to_pylist()
    assert len(doc_ids) == len(set(doc_ids)) == summary["kept"] > 0
    instances = [json.loads(line) for line in storage.read_text(f"{output}/instances.jsonl").splitlines()]
    assert len(instances) == len({i["id"] for i in instances}) == summary["instances"]
