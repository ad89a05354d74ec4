"""Detector folders for the tests: a random head on a given backbone, exported the way ``hades-ray train``
exports one (``hades_ray/detect/synthetic.random_detector``, which the benchmarks use too)."""

from __future__ import annotations

from pathlib import Path


def detector_folder(
    directory: Path, backbone: str, mode: str, window: int, seed: int = 0, pooling: str = "max"
) -> Path:
    """A real detector folder in ``directory`` (the head's random weights drawn from ``seed``)."""
    from hades_ray.detect.synthetic import random_detector

    return Path(random_detector(directory, backbone, mode, window, seed, pooling))
