"""Progress of a sharded job: one log line per finished shard (rows/s and an ETA), a heartbeat line
while no shard finishes (so a long first shard is never silence), and a live bar at a terminal."""

from __future__ import annotations

import logging
import sys
import threading
import time

from hades_ray.pipeline.shards import part_name

log = logging.getLogger("hades_ray.progress")
HEARTBEAT_SECONDS = 30.0


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class Progress:
    """``with Progress(name, shards, rows): ... progress.done(marker)`` for each finished shard."""

    def __init__(self, job: str, shards: int, rows: int, rows_verb: str = "rows", heartbeat: float = HEARTBEAT_SECONDS):
        self.job, self.total_shards, self.total_rows, self.verb = job, shards, rows, rows_verb
        self.heartbeat = heartbeat
        self.shards = self.rows = 0
        self.started = self.last = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"{job}-progress", daemon=True)
        self._bar = None

    def __enter__(self) -> Progress:
        log.info("%s: %d shards to run (%d %s)", self.job, self.total_shards, self.total_rows, self.verb)
        if sys.stderr.isatty() and self.total_shards:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=self.total_rows, unit=self.verb[:-1] or "row", desc=self.job, leave=False)
        if self.total_shards:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._bar is not None:
            self._bar.close()

    def done(self, shard: int, rows: int) -> None:
        """Shard ``shard`` finished; ``rows`` is its planned size (the unit of the total and the ETA)."""
        self.shards += 1
        self.rows += rows
        self.last = time.monotonic()
        elapsed = self.last - self.started
        rate = self.rows / elapsed if elapsed > 0 else 0.0
        left = self.total_rows - self.rows
        eta = _duration(left / rate) if rate > 0 and left > 0 else "0s"
        if self._bar is not None:
            self._bar.update(rows)
        log.info(
            "%s: %s done (%d/%d shards, %d/%d %s): %.2f %s/s, ETA %s",
            self.job,
            part_name(shard),
            self.shards,
            self.total_shards,
            self.rows,
            self.total_rows,
            self.verb,
            rate,
            self.verb,
            eta,
        )

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat):
            if time.monotonic() - self.last >= self.heartbeat and self.shards < self.total_shards:
                log.info(
                    "%s: working, %d/%d shards done, %s elapsed",
                    self.job,
                    self.shards,
                    self.total_shards,
                    _duration(time.monotonic() - self.started),
                )
