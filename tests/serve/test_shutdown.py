"""``hades-ray serve`` as users run it: a process that answers on loopback, and exits 0 on SIGTERM
after stopping Serve and its private Ray cluster."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.loopback import free_port
from tests.detectors import detector_folder

pytestmark = pytest.mark.ray  # `hades-ray serve` starts a Ray cluster of its own

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_sigterm_stops_the_service_cleanly(micro_home, tmp_path):
    detector = detector_folder(tmp_path / "det", str(micro_home / "models" / "gpt2"), "online", 160)
    port = free_port()
    command = [sys.executable, "-m", "hades_ray.cli", "serve", "--model", str(detector), "--port", str(port)]
    command += ["--set", "serve.num_cpus=0.5", "--set", "ray.num_cpus=2", "--set", "score.words=all"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HADES_SERVE_TOKEN": "t0ken"}
    server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        reply = _wait_ready(f"http://127.0.0.1:{port}", server)
        assert reply.json()["ready"] is True
        server.send_signal(signal.SIGTERM)
        out, err = server.communicate(timeout=120)
    finally:
        if server.poll() is None:
            server.kill()
    assert server.returncode == 0, err[-2000:]
    assert f"http://127.0.0.1:{port}/" in out and "bearer token required" in out and "stopped" in out
    assert "Traceback" not in err
    with httpx.Client(timeout=5) as client:  # nothing listens any more
        try:
            client.get(f"http://127.0.0.1:{port}/healthz")
            raise AssertionError("the port still answers after SIGTERM")
        except httpx.TransportError:
            pass


def _wait_ready(url: str, server: subprocess.Popen) -> httpx.Response:
    deadline = time.monotonic() + 180
    with httpx.Client(base_url=url, timeout=10, headers={"Authorization": "Bearer t0ken"}) as client:
        while time.monotonic() < deadline:
            assert server.poll() is None, server.communicate()[1][-2000:]
            try:
                reply = client.get("/healthz")
                if reply.status_code == 200:
                    return reply
            except httpx.TransportError:
                pass
            time.sleep(0.5)
    raise AssertionError("hades-ray serve did not answer in time")
