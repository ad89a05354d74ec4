"""Token auth stays on outside the tests: the private local cluster of ``init_ray`` demands Ray's token
(a head started the way ``make ray-head`` does, and ``ray job submit`` to it, are tested with the job in
``test_jobs.py``).

These tests run Ray with ``RAY_AUTH_MODE`` unset or ``token`` (the suite disables it in conftest.py)
and a private ``HOME``, so the token file they make is never the user's ``~/.ray/auth_token``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
pytestmark = [pytest.mark.ray, pytest.mark.fresh_process]  # make test-fresh, which CI runs after make test


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
