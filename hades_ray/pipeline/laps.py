"""Wall seconds between marks: the one timer of the package's phases (a round's ``timings``, a paper
experiment's ``seconds``) and of the benchmarks under jobs/."""

from __future__ import annotations

import time


class Laps:
    """``lap(name)`` keeps the seconds since the last mark under ``name`` (rounded to ``digits``) and
    returns them unrounded; ``total()``: the seconds since the start."""

    def __init__(self, digits: int = 1):
        self.digits = digits
        self.began = self.last = time.perf_counter()
        self.laps: dict[str, float] = {}

    def lap(self, name: str | None = None) -> float:
        now = time.perf_counter()
        seconds, self.last = now - self.last, now
        if name:
            self.laps[name] = round(seconds, self.digits)
        return seconds

    def total(self) -> float:
        return time.perf_counter() - self.began
