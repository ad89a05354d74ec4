"""The output lock on an object store (moto's S3 server on 127.0.0.1): of drivers started at the same
instant exactly one holds the output, the others are refused naming it; a lock whose lease ran out is
taken over (by one of several takers) with a line naming the dead holder; a held lease is renewed, and
a run whose lease was taken over is told to stop. Each contender is a process of its own."""

import json
import logging
import os
import time

import pytest

from hades_ray.pipeline import s3 as objects
from hades_ray.pipeline import storage
from hades_ray.pipeline.errors import OutputLockedError
from hades_ray.pipeline.lock import OutputLock
from tests.pipeline.lock_race import race

pytest.importorskip("moto")
CONTENDERS, TRIALS = 6, 8


def dead_holder_lock(path: str) -> None:
    body = {"host": "node-7", "pid": 4242, "token": "dead", "since": time.time() - 100, "lease_s": 1.0}
    storage.write(path, json.dumps(body))


@pytest.fixture(scope="module")
def leases_ran_out(s3) -> OutputLock:
    """The outputs whose leases run out, all set up before one wait past their 1 s leases by the store's clock
    (seconds resolution): a dead holder's lock per takeover trial and for the renewal test, and a driver
    stalled past its lease (a long GC pause, a network partition), which this returns."""
    for k in range(TRIALS):
        dead_holder_lock(f"s3://hades/lock-takeover/trial-{k:03d}/_lock.json")
    dead_holder_lock("s3://hades/lock-lease/a/_lock.json")
    stalled = OutputLock("s3://hades/lock-lost", lease_s=1.0)
    stalled.acquire()
    stalled._lease._stop.set()
    stalled._lease._thread.join()
    time.sleep(2.5)
    return stalled


def test_of_drivers_started_at_once_exactly_one_holds_the_output_each_time(s3):
    for trial in race("s3://hades/lock-race", CONTENDERS, TRIALS, s3):
        winners = [r for r in trial if r["got"]]
        assert len(trial) == CONTENDERS and len(winners) == 1, trial
        for refused in (r for r in trial if not r["got"]):
            assert f"pid {winners[0]['pid']} on " in refused["error"]  # the holder named


def test_a_lock_whose_lease_ran_out_is_taken_over_by_exactly_one_of_several_takers(s3, leases_ran_out):
    for trial in race("s3://hades/lock-takeover", CONTENDERS, TRIALS, s3):
        winners = [r for r in trial if r["got"]]
        assert len(winners) == 1, trial
        assert all(f"pid {winners[0]['pid']} on " in r["error"] for r in trial if not r["got"])


def test_a_taken_over_lock_is_logged_with_its_holder_and_a_renewed_lease_is_kept(s3, leases_ran_out, caplog):
    path = "s3://hades/lock-lease/a/_lock.json"
    with caplog.at_level(logging.WARNING), OutputLock("s3://hades/lock-lease/a", lease_s=1.5) as held:
        assert held.locked
        assert "taking over" in caplog.text and "pid 4242 on node-7" in caplog.text
        time.sleep(4.0)  # more than twice the lease: only its renewals keep it
        with pytest.raises(OutputLockedError, match=f"pid {os.getpid()} on "):
            OutputLock("s3://hades/lock-lease/a", lease_s=1.5).acquire()
        held.check()  # still ours
    assert objects.get_tagged(path) is None  # released


def test_a_run_whose_lease_was_taken_over_is_told_to_stop_and_leaves_the_new_lock(s3, leases_ran_out):
    first = leases_ran_out  # stalled past its lease
    second = OutputLock("s3://hades/lock-lost", lease_s=60)
    second.acquire()
    assert not first._lease.renew()
    with pytest.raises(OutputLockedError, match="another run took the output over"):
        first.check()
    first.release()
    assert json.loads(objects.get_tagged("s3://hades/lock-lost/_lock.json").body)["token"] == second.owner["token"]
    second.release()


def test_a_store_without_conditional_writes_says_the_output_is_not_locked(tmp_path, caplog):
    with caplog.at_level(logging.WARNING), OutputLock("gs://bucket/out") as held:
        assert not held.locked
    assert "NOT locked" in caplog.text


def test_threads_of_one_process_hold_a_local_output_one_at_a_time(tmp_path):
    """Waiting threads that take turns: one of them reading the lock file while its holder releases it
    must not take the lock for a dead holder's (that let two imports into one round write one name)."""
    import threading

    inside, most, turns = [0], [0], 60
    guard = threading.Lock()

    def take_turns() -> None:
        for _ in range(turns):
            with OutputLock(tmp_path, wait=True):
                with guard:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                time.sleep(0.0005)
                with guard:
                    inside[0] -= 1

    threads = [threading.Thread(target=take_turns) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 1
    assert not (tmp_path / "_lock.json").exists()
