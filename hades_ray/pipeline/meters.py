"""Memory and time meters of a process and its children (Linux /proc), and of a module's forwards: what the
benchmarks under jobs/ and the device checks measure with (``jobs/bench_common.py`` names them too)."""

from __future__ import annotations

import os
import resource
import threading
import time
from pathlib import Path


def rss_mib(pid: int | str = "self") -> float:
    """A process's resident memory now (Linux /proc); 0 for one that is gone, and this process's peak
    so far where there is no /proc."""
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 if pid == "self" else 0.0


def descendants(root: int) -> set[int]:
    """``root`` and every process below it now (Linux /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    family, new = {root}, {root}
    while new:
        new = {p for p, parent in parents.items() if parent in family} - family
        family |= new
    return family


def tree_rss_mib(root: int) -> float:
    """Resident memory of ``root`` and all its descendants now (Linux /proc)."""
    return sum(rss_mib(pid) for pid in descendants(root))


class Sampler:
    """``measure()`` every ``every`` seconds while a block runs, and at its start and end: its ``samples``,
    their ``start`` and ``peak`` (a process-wide peak would hide a block's own behind what ran before it)."""

    def __init__(self, measure=rss_mib, every: float = 0.02):
        self.measure, self.every = measure, every

    def __enter__(self) -> Sampler:
        self.samples = [self.measure()]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(self.every):
            self.samples.append(self.measure())

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append(self.measure())

    @property
    def start(self) -> float:
        return self.samples[0]

    @property
    def peak(self) -> float:
        return max(self.samples)


class ForwardClock:
    """Seconds spent inside a module's forwards, and how many ran: hooks, so the code timed is unchanged.
    With ``cuda``, CUDA events around each forward (the device's own clock) instead of the wall clock; the
    first ``skip`` forwards (warm-up) are not counted."""

    def __init__(self, module, cuda: bool = False, skip: int = 0):
        self.cuda, self.skip, self.spans, self._open = cuda, skip, [], None
        module.register_forward_pre_hook(self._start)
        module.register_forward_hook(self._stop)

    def _mark(self):
        if not self.cuda:
            return time.perf_counter()
        import torch

        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def _start(self, *_) -> None:
        self._open = self._mark()

    def _stop(self, *_) -> None:
        if self.skip:
            self.skip -= 1
        else:
            self.spans.append((self._open, self._mark()))

    def take(self) -> tuple[float, int]:
        """The seconds and count of the forwards since the last take."""
        spans, self.spans = self.spans, []
        if not self.cuda:
            return sum(end - start for start, end in spans), len(spans)
        import torch

        torch.cuda.synchronize()
        return sum(start.elapsed_time(end) for start, end in spans) / 1000, len(spans)


def measured(fn, every: float = 0.5) -> dict:
    """``fn()``'s figures with its wall seconds and the peak memory of this process and its children (Ray's
    workers), sampled every ``every`` seconds."""
    began = time.perf_counter()
    with Sampler(lambda: tree_rss_mib(os.getpid()), every=every) as memory:
        extra = fn() or {}
    return {"wall_s": round(time.perf_counter() - began, 1), "peak_rss_mib": round(memory.peak), **extra}
