"""Starting or joining Ray the same way from the CLI, the jobs and the tests.

Local clusters stay on 127.0.0.1 (Ray binds the external interface otherwise; see hades_ray/docs/ray.md) and
never attach to a stale cluster left by a killed head. Token authentication stays
on: Ray 2.59+ turns it on for a new local cluster unless ``RAY_AUTH_MODE`` says otherwise, and
writes the token to ``~/.ray/auth_token``, so another user of a shared host cannot reach its GCS
port. Only the test suite sets ``RAY_AUTH_MODE=disabled`` (tests/conftest.py), to drive the Ray CLI
without a token.

Two of Ray's console lines are silenced here, being harmless for these jobs (``quiet_ray_console``).
"""

from __future__ import annotations

import logging
import os
import sys

QUIET_ENV = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # makes the node address 127.0.0.1
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
_QUIETED: list[bool] = []  # quiet_ray_console ran in this process (its effects last as long as the process)


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
    else:
        ray.init(
            address="local",
            num_cpus=num_cpus or os.cpu_count(),
            include_dashboard=False,
            log_to_driver=not quiet,
            logging_level="ERROR",
            runtime_env=runtime_env,
        )
    if quiet and not _QUIETED:
        quiet_ray_console(ray)
        _QUIETED.append(True)
    return ray


class _DropMessage(logging.Filter):
    def __init__(self, start: str):
        super().__init__()
        self.start = start

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.start)


def quiet_ray_console(ray) -> None:
    """Silence two lines Ray prints on every job's console that read as faults and are none here.

    - Ray Data's "Progress bars disabled" warning: init_ray turns the bars off on purpose where stderr is
      not a terminal (logs, CI), and says so above.
    - core_worker.cc's ERROR "Actor ... has constructor arguments in the object store and max_restarts
      > 0": Ray Data itself passes every actor pool's map function by reference with restarts on
      (ray-project/ray#57733), whatever the stage; that object is put by this driver and held by the
      running dataset until it ends, so an actor restarted meanwhile still finds it. The C++ line is
      logged once per process (RAY_LOG_ONCE_PER_PROCESS) with no switch of its own, so it is spent here,
      on a throwaway actor created while this process's stderr points at /dev/null, then killed.
    """
    logging.getLogger("ray.data._internal.progress").addFilter(_DropMessage("Progress bars disabled"))

    @ray.remote(num_cpus=0, max_restarts=1)
    class _SpendRestartWarning:
        def __init__(self, _by_reference):
            pass

    argument = ray.put(None)
    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        actor = _SpendRestartWarning.remote(argument)  # the line is written during this call
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
    ray.kill(actor, no_restart=True)


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
