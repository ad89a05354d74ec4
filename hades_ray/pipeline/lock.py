"""The one lock of the project: one run at a time per output (pipeline/README.md, "Lock"), refusing a
second holder, or making it wait (``wait=True``: two imports into one round both succeed, one after the other).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
import uuid
from pathlib import Path

from hades_ray.pipeline import storage
from hades_ray.pipeline.errors import OutputLockedError

log = logging.getLogger(__name__)
LOCK_NAME = "_lock.json"
WAIT_S = 0.05  # how often a waiting holder looks at the lock again


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class OutputLock:
    """``with OutputLock(output):`` holds the output for this run; a second holder is refused, or with
    ``wait=True`` waits until the first releases the lock or its process is gone."""

    def __init__(self, output: str | Path, wait: bool = False):
        self.path = storage.join(output, LOCK_NAME)
        self.wait = wait
        self.owner = {"host": socket.gethostname(), "pid": os.getpid(), "token": uuid.uuid4().hex, "since": time.time()}

    def _refuse(self, holder: dict) -> OutputLockedError:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder.get("since", 0)))
        return OutputLockedError(
            f"{self.path}: another run (pid {holder.get('pid')} on {holder.get('host')}, since {since}) is writing "
            "to this output; wait for it to finish, or delete the lock file if that run is dead"
        )

    def _holder(self) -> dict | None:
        try:
            return json.loads(storage.read_text(self.path))
        except FileNotFoundError:
            return None
        except (ValueError, OSError):
            return {}

    def _stale(self, holder: dict) -> bool:
        return holder.get("host") == self.owner["host"] and not _alive(int(holder.get("pid", -1)))

    def acquire(self) -> None:
        storage.makedirs(str(self.path).rsplit("/", 1)[0])
        take = self._take_local if storage.is_local(self.path) else self._take_remote
        while (holder := take()) is not None:
            if not self.wait:
                raise self._refuse(holder)
            time.sleep(WAIT_S)

    def _take_remote(self) -> dict | None:
        """None once this run holds the lock, else what the holder's lock file says."""
        holder = self._holder()
        if holder is not None and not self._stale(holder):
            return holder
        storage.write(self.path, json.dumps(self.owner))
        holder = self._holder() or {}
        return None if holder.get("token") == self.owner["token"] else holder

    def _take_local(self) -> dict | None:
        path = storage.resolve(self.path)[1]
        for _ in range(2):
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._holder() or {}
                if not self._stale(holder):
                    return holder
                log.warning("taking over %s: the run that held it (pid %s) is gone", self.path, holder.get("pid"))
                storage.delete(path)
                continue
            with os.fdopen(fd, "w") as handle:
                handle.write(json.dumps(self.owner))
            return None
        return self._holder() or {}

    def release(self) -> None:
        if (self._holder() or {}).get("token") == self.owner["token"]:
            storage.delete(self.path)

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
