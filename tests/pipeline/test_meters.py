"""The package's meters (hades_ray/pipeline/meters.py): a process tree's memory, a block's sampled peak, a
module's forwards timed by hooks, and a measured call's figures."""

from __future__ import annotations

import os
import subprocess
import sys

import torch

from hades_ray.pipeline.meters import ForwardClock, Sampler, descendants, measured, rss_mib, tree_rss_mib


def test_a_child_is_in_its_parents_tree_and_its_memory_counts():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        assert {os.getpid(), child.pid} <= descendants(os.getpid())
        assert tree_rss_mib(os.getpid()) > rss_mib() > 0
    finally:
        child.kill()
        child.wait()
    assert rss_mib(child.pid) == 0.0


def test_the_sampler_keeps_a_blocks_peak_and_the_clock_skips_its_warm_up():
    values = iter(range(10_000))
    with Sampler(lambda: next(values), every=0.001) as sampled:
        measured(lambda: None, every=0.001)
    assert sampled.start == 0 and sampled.peak == sampled.samples[-1] >= 1
    layer = torch.nn.Linear(2, 2)
    clock = ForwardClock(layer, skip=1)
    for _ in range(3):
        layer(torch.zeros(1, 2))
    seconds, calls = clock.take()
    assert calls == 2 and seconds >= 0 and clock.take() == (0, 0)
    figures = measured(lambda: {"rows": 3}, every=0.001)
    assert figures["rows"] == 3 and figures["wall_s"] >= 0 and figures["peak_rss_mib"] > 0
