"""The one lock of the project: one run at a time per output (pipeline/README.md, "Lock"), refusing a
second holder, or making it wait (``wait=True``: two imports into one round both succeed, one after the other).

On a local disk the lock file is created exclusively; a lock whose process is gone on this host is
taken over. On S3 it is created with a conditional write (``If-None-Match: *``: of runs started at the
same instant exactly one creates it) and held by a lease: the holder rewrites it every third of
``lease_s`` (a thread of the driver, ``If-Match`` on its ETag), and a lock not rewritten for ``lease_s``
by the store's clock is taken over, wherever its holder ran (at once when its process is gone from
this host), by one ``If-Match`` write: of two takers only one succeeds. A store without conditional
writes gets no lock, and a warning that says so.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from pathlib import Path

from hades_ray.pipeline import s3, storage
from hades_ray.pipeline.errors import OutputLockedError

log = logging.getLogger(__name__)
LOCK_NAME = "_lock.json"
WAIT_S = 0.05  # how often a waiting holder looks at the lock again
LEASE_S = 60.0  # an object-store lock not renewed for this long (its driver died) is taken over


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_HELD: set[str] = set()  # the tokens of the locks this process holds now
# One thread of this process at a time looks at, takes over or removes a local lock file: a thread that
# judged the file stale (its holder, a lock of this process, was just released) must not delete the file
# another thread has created since, and so let a third in beside it.
_LOCAL = threading.Lock()


def _gone(holder: dict, host: str) -> bool:
    """Whether the lock's holder ran on this host and is gone: its process ended, or it is this process,
    which holds no such lock now (a run here that failed with its store down and could not remove it)."""
    if holder.get("host") != host:
        return False
    pid = int(holder.get("pid", -1))
    return not _alive(pid) or (pid == os.getpid() and holder.get("token") not in _HELD)


class OutputLock:
    """``with OutputLock(output):`` holds the output for this run; a second holder is refused, or with
    ``wait=True`` waits until the first releases the lock, its process is gone (local) or its lease ran
    out (object store)."""

    def __init__(self, output: str | Path, wait: bool = False, lease_s: float = LEASE_S):
        self.path = storage.join(output, LOCK_NAME)
        self.wait = wait
        self.lease_s = lease_s
        self.owner = {"host": socket.gethostname(), "pid": os.getpid(), "token": uuid.uuid4().hex, "since": time.time()}
        self.locked = False  # False on a store without conditional writes: nothing holds the output
        self._lease: Lease | None = None

    def _refuse(self, holder: dict) -> OutputLockedError:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder.get("since", 0)))
        if "lease_s" in holder:
            then = f"a run that died is taken over once its lease ({holder['lease_s']:g} s) runs out unrenewed"
        else:
            then = "or delete the lock file if that run is dead"
        return OutputLockedError(
            f"{self.path}: another run (pid {holder.get('pid')} on {holder.get('host')}, since {since}) is "
            f"writing to this output; wait for it to finish ({then})"
        )

    def _holder(self) -> dict | None:
        try:
            return json.loads(storage.read_text(self.path))
        except FileNotFoundError:
            return None
        except (ValueError, OSError):
            return {}

    def _stale(self, holder: dict) -> bool:
        return _gone(holder, self.owner["host"])

    def acquire(self) -> None:
        if storage.is_local(self.path):
            storage.makedirs(str(self.path).rsplit("/", 1)[0])
            take = self._take_local
        elif str(self.path).startswith("s3://"):
            self._lease = Lease(self.path, {**self.owner, "lease_s": self.lease_s})
            take = self._lease.take
        else:
            log.warning("%s: this store offers no create-if-absent write, so the output is NOT locked: run one job "
                        "at a time on it", self.path)  # fmt: skip
            return
        # Held before the lock file can carry the token: a thread of this process that reads the file in
        # between must see a live holder, not "this process, which holds no such lock" (_gone).
        _HELD.add(self.owner["token"])
        try:
            while (holder := take()) is not None:
                if not self.wait:
                    raise self._refuse(holder)
                time.sleep(WAIT_S)
        except s3.ConditionalWritesUnsupported:
            _HELD.discard(self.owner["token"])
            log.warning("%s: this store refuses conditional writes (If-None-Match), so the output is NOT locked: "
                        "run one job at a time on it", self.path)  # fmt: skip
            self._lease = None
            return
        except BaseException:
            _HELD.discard(self.owner["token"])
            raise
        self.locked = True
        if self._lease:
            self._lease.start()

    def _take_local(self) -> dict | None:
        with _LOCAL:
            return self._take_local_file(storage.resolve(self.path)[1])

    def _take_local_file(self, path: str) -> dict | None:
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

    def check(self) -> None:
        """Raise when this run's lease was taken over (it went unrenewed past ``lease_s``): another run
        now writes to the output, so this one must stop."""
        if self._lease and self._lease.lost:
            raise OutputLockedError(
                f"{self.path}: this run's lease was not renewed for {self.lease_s:g} s and another run "
                "took the output over; this run stops so that the two do not write into one output"
            )

    def release(self) -> None:
        _HELD.discard(self.owner["token"])
        was, self.locked = self.locked, False
        if self._lease:
            self._lease.release()
        elif was:
            with _LOCAL:
                if (self._holder() or {}).get("token") == self.owner["token"]:
                    storage.delete(self.path)

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class Lease:
    """An S3 lock object held by conditional writes and renewed by a daemon thread."""

    def __init__(self, path: str, owner: dict):
        self.path, self.owner = path, owner
        self.lease_s = float(owner["lease_s"])
        self.etag = ""
        self.lost = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _body(self) -> bytes:
        return json.dumps({**self.owner, "renewed": time.time()}).encode()

    def take(self) -> dict | None:
        """None once this run holds the lock, else what the holder's lock object says."""
        for _ in range(3):
            try:
                self.etag = s3.put_conditional(self.path, self._body())
                return None
            except s3.ConditionFailed:
                pass
            if (current := s3.get_tagged(self.path)) is not None:
                break
        else:  # released and taken again between our requests, three times over
            return {}
        holder = _parse(current.body)
        lease = float(holder.get("lease_s", LEASE_S))
        gone = _gone(holder, self.owner["host"])
        if current.age_s <= lease and not gone:
            return holder
        try:
            self.etag = s3.put_conditional(self.path, self._body(), if_match=current.etag)
        except s3.ConditionFailed:  # another taker won, or the holder renewed just now
            return _parse(getattr(s3.get_tagged(self.path), "body", b"")) or holder
        why = "is gone" if gone else f"has not renewed its lease for {current.age_s:.0f} s (lease {lease:g} s)"
        log.warning("taking over %s: the run that held it (pid %s on %s) %s", self.path, holder.get("pid"),
                    holder.get("host"), why)  # fmt: skip
        return None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._renew, name=f"lease {self.path}", daemon=True)
        self._thread.start()

    def _renew(self) -> None:
        while not self._stop.wait(self.lease_s / 3) and self.renew():
            pass

    def renew(self) -> bool:
        """Rewrite the lock object if it is still this run's; False once another run took it over."""
        try:
            self.etag = s3.put_conditional(self.path, self._body(), if_match=self.etag)
        except s3.ConditionFailed:
            self.lost = True
            log.error("%s: this run's lease was taken over by another run; stopping", self.path)
        except Exception as error:  # a store briefly unavailable: the next renewal tries again
            log.warning("%s: renewing the lease failed (%s); trying again in %g s", self.path, error, self.lease_s / 3)
        return not self.lost

    def release(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
        if not self.lost and self.etag:
            try:
                s3.delete_if_match(self.path, self.etag)
            except Exception as error:  # the store is down: the run's own error matters more than this
                log.warning("%s: could not remove the lock (%s); the next run takes it over (this run is gone)",
                            self.path, str(error).splitlines()[0] if str(error) else type(error).__name__)  # fmt: skip


def _parse(body: bytes) -> dict:
    try:
        return json.loads(body)
    except ValueError:
        return {}
