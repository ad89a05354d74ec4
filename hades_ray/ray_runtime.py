"""Starting or joining Ray the same way from the CLI, the jobs and the tests.

Local clusters stay on 127.0.0.1 (Ray binds the external interface otherwise; see hades_ray/docs/ray.md) and
never attach to a stale cluster left by a killed head. Token authentication stays
on: Ray 2.59+ turns it on for a new local cluster unless ``RAY_AUTH_MODE`` says otherwise, and
writes the token to ``~/.ray/auth_token``, so another user of a shared host cannot reach its GCS
port. Only the test suite sets ``RAY_AUTH_MODE=disabled`` (tests/conftest.py), to drive the Ray CLI
without a token.
"""

from __future__ import annotations

import os
import sys

QUIET_ENV = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # makes the node address 127.0.0.1
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def init_ray(address: str = "", num_cpus: int = 0, quiet: bool = True):
    """Join ``address`` (or ``RAY_ADDRESS``), else start a private local cluster on loopback."""
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    import ray

    if ray.is_initialized():
        return ray
    # Ray Data's progress bars help at a terminal and only clutter logs and CI output elsewhere.
    from ray.data import DataContext

    DataContext.get_current().enable_progress_bars = sys.stderr.isatty()
    target = address or os.environ.get("RAY_ADDRESS", "")
    runtime_env = {"env_vars": {k: os.environ[k] for k in QUIET_ENV}}
    if target:
        ray.init(address=target, runtime_env=runtime_env, log_to_driver=not quiet)
        return ray
    ray.init(
        address="local",
        num_cpus=num_cpus or os.cpu_count(),
        include_dashboard=False,
        log_to_driver=not quiet,
        logging_level="ERROR",
        runtime_env=runtime_env,
    )
    return ray


def cluster_cpus() -> float:
    import ray

    return float(ray.cluster_resources().get("CPU", 1))


def task_mapper(address: str = "", num_cpus: int = 0):
    """``mapper(fn, items)`` running ``fn`` on each item as a small Ray task (planning work such as
    indexing the input files runs on workers, next to the data, not in the driver)."""
    ray = init_ray(address, num_cpus)

    def mapper(fn, items):
        remote = ray.remote(num_cpus=0.25)(fn)
        return ray.get([remote.remote(item) for item in items])

    return mapper
