"""The job as users run it on clusters: through `ray job submit` to a head that demands Ray's token, and
surviving the loss of a node."""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.loopback import free_port

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
pytestmark = pytest.mark.ray


def _env(micro_home, home: Path | None = None, auth: str = "disabled") -> dict:
    """The environment of a test's own cluster and its clients: token auth ``disabled`` unless asked
    for, and then a private ``HOME`` (``auth`` "token"), so the token file is never the user's."""
    env = dict(
        os.environ,
        RAY_AUTH_MODE=auth,
        RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",
        HADES_RAY_HOME=str(micro_home),
        PATH=f"{BIN}:{os.environ['PATH']}",
        PYTHONUNBUFFERED="1",
    )
    env.pop("RAY_ADDRESS", None), env.pop("RAY_AUTH_TOKEN", None)
    if home is not None:
        env["HOME"] = str(home)
    return env


def _input(shared_data, tmp_path, rows: int) -> Path:
    lines = (shared_data / "enwiki2015_first_paragraphs.jsonl").read_text(encoding="utf-8").splitlines()[:rows]
    path = tmp_path / "input.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_cluster_script(name: str, micro_home, shared_data, tmp_path, rows: int, timeout: int) -> tuple[dict, Path]:
    """Run ``tests/cluster/NAME`` (a script that starts its own cluster: a test's Ray session cannot host a
    second one) on the first ``rows`` leads; returns its JSON verdict and the job's output folder."""
    output = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, str(Path(__file__).parent / name), str(_input(shared_data, tmp_path, rows)), str(output)],
        env=_env(micro_home),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # Ray may print its own notices after the verdict: take the verdict's line.
    return json.loads([line for line in done.stdout.splitlines() if line.startswith("{")][-1]), output


def _doc_ids(output: Path) -> list[str]:
    return [r for p in sorted((output / "pool").glob("*.parquet")) for r in pq.read_table(p)["doc_id"].to_pylist()]


def _wait_listening(port: int, deadline: float) -> None:
    """Until something accepts connections on ``port`` (the dashboard), or the deadline."""
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.5)


@pytest.mark.cluster
def test_job_submitted_through_the_jobs_api_needs_the_token(micro_home, shared_data, tmp_path):
    """A head started as ``make ray-head`` starts it keeps Ray's token auth on: the perturbation job
    submitted with the token runs to the end; a caller without the token is refused."""
    home, stranger = tmp_path / "home", tmp_path / "stranger"
    home.mkdir(), stranger.mkdir()
    env = _env(micro_home, home, auth="token")
    subprocess.run([str(BIN / "ray"), "get-auth-token", "--generate"], env=env, capture_output=True, check=True)
    port, dashboard = free_port(), free_port()
    head = subprocess.Popen(
        [
            str(BIN / "ray"),
            "start",
            "--head",
            f"--port={port}",
            "--node-ip-address=127.0.0.1",
            "--dashboard-host=127.0.0.1",
            f"--dashboard-port={dashboard}",
            "--num-cpus=2",
            "--block",
            # Fixed default agent ports would collide with any other Ray on this machine.
            f"--dashboard-agent-listen-port={free_port()}",
            f"--dashboard-agent-grpc-port={free_port()}",
            f"--metrics-export-port={free_port()}",
            f"--runtime-env-agent-port={free_port()}",
            f"--temp-dir={tempfile.mkdtemp(prefix='hr', dir='/tmp')}",
        ],  # short: socket paths are limited
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        output = tmp_path / "out"
        runtime_env = json.dumps(
            {"env_vars": {"HADES_RAY_HOME": str(micro_home)}, "excludes": [".venv", ".git", "out"]}
        )
        submit = [
            str(BIN / "ray"),
            "job",
            "submit",
            "--address",
            f"http://127.0.0.1:{dashboard}",
            "--working-dir",
            str(ROOT),
            "--runtime-env-json",
            runtime_env,
            "--",
            "python",
            "-m",
            "hades_ray",
            "perturb",
            "--input",
            str(_input(shared_data, tmp_path, 6)),
            "--output",
            str(output),
            "--set",
            "perturb.rank.num_candidates=2",
        ]
        deadline = time.time() + 300  # a loaded machine can take minutes
        _wait_listening(dashboard, deadline)  # polled here: each `ray job submit` below is a whole Ray CLI process
        while True:  # the dashboard and its job agent take a few seconds to accept jobs
            done = subprocess.run(submit, env=env, capture_output=True, text=True, timeout=600)
            not_ready = any(s in done.stdout + done.stderr for s in ("Failed to connect", "No available agent"))
            if done.returncode == 0 or not not_ready or time.time() > deadline:
                break
            time.sleep(3)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert "succeeded" in done.stdout
        summary = json.loads((output / "summary.json").read_text())
        assert summary["read"] == 6 and summary["kept"] == len(_doc_ids(output)) > 0
        refused = subprocess.run(submit, env=_env(micro_home, stranger, auth="token"), capture_output=True, text=True)
        assert refused.returncode != 0 and "succeeded" not in refused.stdout
        assert "token" in (refused.stdout + refused.stderr).lower()
    finally:
        os.killpg(head.pid, signal.SIGTERM)  # our own head only: `ray stop` would stop everyone's Ray
        try:
            head.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)


@pytest.mark.cluster
def test_job_finishes_every_row_once_after_losing_a_node(micro_home, shared_data, tmp_path):
    # 12 leads, 6 shards of 2: at least as many shards as the 3 REPLACE actors node_removal.py asks for,
    # so the pools keep their size and spread to the worker node (24 leads only doubled the work after).
    rows = 12
    verdict, output = run_cluster_script("node_removal.py", micro_home, shared_data, tmp_path, rows, timeout=900)
    assert verdict["actors_on_removed_node"] > 0  # the node that went away was doing the job's work
    assert verdict["job_running_at_removal"] and verdict["markers_at_removal"] < rows // 2
    assert not verdict["alive"]
    summary = verdict["summary"]
    assert summary["read"] == rows and summary["shards"]["total"] == rows // 2
    ids = _doc_ids(output)
    assert len(ids) == len(set(ids)) == summary["kept"]
    assert summary["kept"] + summary["too_short"] + summary["no_maskable_words"] + summary["quarantined"] == rows
