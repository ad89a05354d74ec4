"""Shared fixtures: micro models under a private HADES_RAY_HOME, one local Ray cluster per session,
the ``../shared`` data (tests that need it skip where it is absent) and a local S3 server (moto)."""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

import pytest

from tests.loopback import free_port

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"

# Tests never read or write the user's model cache: a private, empty HADES_RAY_HOME until micro_home fills one.
os.environ["HADES_RAY_HOME"] = tempfile.mkdtemp(prefix="hades_home_empty_")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
# Ray Train's controller looks at its workers every 2 s by default, so each fit waits up to 2 s at every
# step (start, report, finish); the tests' fits are seconds long. Its preemption watcher (one more actor
# per fit) and metrics only matter on clusters that preempt nodes or export metrics. Set before any Ray
# starts: workers and test clusters inherit them, and Train passes them from the driver to its actors.
os.environ.setdefault("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", "0.25")
os.environ.setdefault("RAY_TRAIN_ENABLE_PREEMPTION_WATCHER", "0")
os.environ.setdefault("RAY_TRAIN_METRICS_ENABLED", "0")
# The session cluster's idle workers (ray_local): Ray keeps as many as there are CPUs (2 here) and ends
# the others after 1 s idle, so each of the suite's many small Ray jobs started fresh worker processes
# and paid their imports again. Up to 8 kept for a minute: perturb/test_job + score/test_score +
# guard/test_guard started 34 worker processes instead of 52 (wall 252 s against 394 s at load ~36).
# Only for that cluster: the tests' own clusters (16 CPUs in cluster/gpu_pools.py) keep Ray's default.
SESSION_WORKERS = {"RAY_num_workers_soft_limit": "8", "RAY_idle_worker_killing_time_threshold_ms": "60000"}
# S3 is the tests' own moto server (the ``s3`` fixture starts it on this port when a test asks): set for
# the whole run, so no test reaches a real store and Ray workers started before the fixture see it too.
S3_PORT = free_port()
S3_ENV = {
    "AWS_ENDPOINT_URL": f"http://127.0.0.1:{S3_PORT}",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}
os.environ.update(S3_ENV)


# Packages whose test files share a costly package-scoped fixture (tests/serve: the served app, ~25 s to
# start): under ``--dist loadfile`` (the Makefile's) all their files go to one worker, as one unit.
ONE_WORKER_PACKAGES = ("tests/serve/",)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: absent without it
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` with ONE_WORKER_PACKAGES as units (xdist_group marks do not take under pytest 9:
    xdist 3.8 renames ``item._nodeid``, which pytest 9 no longer reads)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FileOrPackageScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = super()._split_scope(nodeid)
            return next((p for p in ONE_WORKER_PACKAGES if file.startswith(p)), file)

    return FileOrPackageScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is absent")
    return SHARED_DATA


@pytest.fixture(scope="session")
def micro_home(tmp_path_factory) -> Path:
    """A HADES_RAY_HOME holding micro random-weight models in the offline kit's layout."""
    from hades_ray.models.micro import build_micro_kit

    home = tmp_path_factory.mktemp("hades_home")
    build_micro_kit(home)
    previous = os.environ.get("HADES_RAY_HOME")
    os.environ["HADES_RAY_HOME"] = str(home)
    yield home
    if previous is None:
        os.environ.pop("HADES_RAY_HOME", None)
    else:
        os.environ["HADES_RAY_HOME"] = previous


@pytest.fixture(scope="session")
def ray_local(micro_home):
    """One local Ray cluster on 127.0.0.1 for the whole session (per-test clusters are slow: pipeline/README.md)."""
    from hades_ray.ray_runtime import init_ray

    with pytest.MonkeyPatch.context() as patch:  # read once, by the raylet init_ray starts
        for key, value in SESSION_WORKERS.items():
            patch.setenv(key, os.environ.get(key, value))
        ray = init_ray(num_cpus=2)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def s3():
    """A moto S3 server on 127.0.0.1 with a bucket ``hades``, one for the run; yields the AWS_* variables
    that reach it. They are this process's environment from the start (S3_ENV above), so the test run's
    Ray workers, started later, have them too."""
    import pyarrow.fs as pafs

    from tests.pipeline.s3_local import start_moto, wait_for_port

    server = start_moto(S3_PORT)
    wait_for_port(S3_PORT, server)  # an exit here: port S3_PORT taken since conftest chose it?
    bucket_maker = pafs.S3FileSystem(
        endpoint_override=f"127.0.0.1:{S3_PORT}", scheme="http", region="us-east-1", allow_bucket_creation=True
    )
    bucket_maker.create_dir("hades")
    yield dict(S3_ENV)
    os.killpg(server.pid, signal.SIGTERM)
    server.wait(timeout=30)


@pytest.fixture(scope="module")
def generator(micro_home):
    """The micro kit's GPT-2 and its tokenizer as the guard loads them, once per module."""
    import torch

    from hades_ray.guard.sampling import prepare_tokenizer
    from hades_ray.models.registry import load_causal_lm

    torch.set_num_threads(1)
    tokenizer, model = load_causal_lm("local:gpt2", "cpu")
    return prepare_tokenizer(tokenizer), model


@pytest.fixture(scope="session")
def micro_multilingual_home(micro_home) -> Path:
    """``micro_home`` with the multilingual micro kit beside the English one: ``local:mlm-multi`` and
    ``local:gpt2-multi``, whose WordPiece vocabulary is trained on tests/data/wiki40b and English leads."""
    from hades_ray.models.micro import build_micro_multilingual_kit
    from tests.languages import all_texts

    build_micro_multilingual_kit(micro_home, all_texts())
    return micro_home
