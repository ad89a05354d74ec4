"""Detector folders for the tests: a random head on a given backbone, exported the way ``hades-ray train``
exports one (``jobs/bench_common.make_detector``, which the benchmarks use too)."""

from __future__ import annotations

from pathlib import Path


def detector_folder(directory: Path, backbone: str, mode: str, window: int, seed: int = 0) -> Path:
    """A real detector folder in ``directory`` (the head's random weights drawn from ``seed``)."""
    from jobs.bench_common import make_detector

    return Path(make_detector(directory, backbone, mode, window, seed))
