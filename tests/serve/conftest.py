"""The served app that the package's HTTP tests share (tests/serve/test_serve.py, test_guard_url.py): one
Serve start (~25 s on 2 cores) for all of them, stopped after the package's last test. pytest-xdist runs
the package's files on one worker (``ONE_WORKER_PACKAGES`` in tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.detectors import detector_folder
from tests.serve import running


@pytest.fixture(scope="package")
def detector(micro_home, tmp_path_factory):
    """An online detector on the micro GPT-2, 160 steps on the micro detection data."""
    return detector_folder(tmp_path_factory.mktemp("det") / "gpt2", str(micro_home / "models" / "gpt2"), "online", 160)


@pytest.fixture(scope="package")
def url(detector, ray_local):
    with running.served(detector, running.SETTINGS, running.TOKEN, "hades") as url:
        yield url
