"""Token auth stays on outside the tests: the private local cluster of ``init_ray`` and a head started
the way ``make ray-head`` does both demand Ray's token, and ``ray job submit`` works only with it.

These tests run Ray with ``RAY_AUTH_MODE`` unset or ``token`` (the suite disables it in conftest.py)
and a private ``HOME``, so the token file they make is never the user's ``~/.ray/auth_token``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.loopback import free_port

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
pytestmark = pytest.mark.ray



def _env(home: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_MODE", "RAY_ADDRESS", "RAY_AUTH_TOKEN")}
    env.update(HOME=str(home), PATH=f"{BIN}:{env['PATH']}", RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", **extra)
    return env


def test_init_ray_starts_a_local_cluster_with_token_auth(tmp_path):
    script = (
        "from hades_ray.ray_runtime import init_ray\n"
        "from ray._raylet import AuthenticationMode, get_authentication_mode\n"
        "ray = init_ray(num_cpus=1)\n"
        "print(get_authentication_mode() == AuthenticationMode.TOKEN, ray.get(ray.remote(lambda: 41).remote()) + 1)\n"
        "ray.shutdown()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=_env(tmp_path), capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-2:] == ["True", "42"]
    assert (tmp_path / ".ray" / "auth_token").is_file()  # Ray made the token, in the private HOME


def test_job_submission_needs_the_token(tmp_path):
    home, stranger = tmp_path / "home", tmp_path / "stranger"
    home.mkdir(), stranger.mkdir()
    subprocess.run([str(BIN / "ray"), "get-auth-token", "--generate"], env=_env(home), capture_output=True, check=True)
    port, dashboard = free_port(), free_port()
    head = subprocess.Popen(
        [str(BIN / "ray"), "start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1"]
        + ["--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard}", "--num-cpus=1", "--block"]
        + [f"--dashboard-agent-listen-port={free_port()}", f"--dashboard-agent-grpc-port={free_port()}"]
        + [f"--metrics-export-port={free_port()}", f"--runtime-env-agent-port={free_port()}"]
        + [f"--temp-dir={tempfile.mkdtemp(prefix='hra', dir='/tmp')}"],  # short: socket paths are limited
        env=_env(home, RAY_AUTH_MODE="token"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    submit = [str(BIN / "ray"), "job", "submit", "--address", f"http://127.0.0.1:{dashboard}", "--"]
    submit += ["python", "-c", "print('job ran', 6 * 7)"]
    try:
        deadline = time.time() + 300  # a loaded machine can take minutes
        while True:  # the dashboard and its job agent take a few seconds to accept jobs
            done = subprocess.run(submit, env=_env(home, RAY_AUTH_MODE="token"), capture_output=True, text=True)
            not_ready = any(s in done.stdout + done.stderr for s in ("Failed to connect", "No available agent"))
            if done.returncode == 0 or not not_ready or time.time() > deadline:
                break
            time.sleep(3)
        assert done.returncode == 0 and "job ran 42" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
        refused = subprocess.run(submit, env=_env(stranger, RAY_AUTH_MODE="token"), capture_output=True, text=True)
        assert refused.returncode != 0 and "job ran" not in refused.stdout
        assert "token" in (refused.stdout + refused.stderr).lower()
    finally:
        os.killpg(head.pid, signal.SIGTERM)  # our own head only: `ray stop` would stop everyone's Ray
        try:
            head.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
