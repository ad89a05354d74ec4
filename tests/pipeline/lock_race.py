"""One contender of the lock race (tests/pipeline/test_lock.py, jobs/chaos.py), driven line by line
through stdin by the process that started it: it prints ``{"ready": PID}``; on ``go K`` it takes
``OutputLock`` of ``PREFIX/trial-K`` and prints one JSON line (``got`` true, or the refusal naming the
holder); on ``release`` it lets go of a lock it got and prints ``{"released": PID}``. Every contender
gets ``go K`` at once and ``release`` only after all have answered, so a winner holds the lock while
the others ask, however slow the machine."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from hades_ray.pipeline.errors import OutputLockedError
from hades_ray.pipeline.lock import OutputLock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prefix", required=True, help="s3:// folder holding one output per trial")
    parser.add_argument("--lease", type=float, default=60.0, help="the lock's lease in seconds")
    args = parser.parse_args()
    from hades_ray.pipeline import s3

    s3.client()  # made before the first race, so that no contender is late by its import
    print(json.dumps({"ready": os.getpid()}), flush=True)
    held = None
    for line in sys.stdin:
        command = line.split()
        if command[0] == "go":
            trial = int(command[1])
            lock = OutputLock(f"{args.prefix}/trial-{trial:03d}", lease_s=args.lease)
            report = {"trial": trial, "pid": os.getpid()}
            try:
                lock.acquire()
                held = lock
                print(json.dumps({**report, "got": True}), flush=True)
            except OutputLockedError as error:
                print(json.dumps({**report, "got": False, "error": str(error)}), flush=True)
        elif command[0] == "release":
            if held is not None:
                held.release()
                held = None
            print(json.dumps({"released": os.getpid()}), flush=True)


def race(prefix: str, contenders: int, trials: int, env: dict) -> list[list[dict]]:
    """Each trial's reports, from ``contenders`` processes told to take the lock at once, ``trials``
    times (tests/pipeline/lock_race.py: a winner holds it until every contender has answered)."""
    args = [sys.executable, "-m", "tests.pipeline.lock_race", "--prefix", prefix]
    env = {**os.environ, **env}
    procs = [subprocess.Popen(args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
             for _ in range(contenders)]  # fmt: skip

    def tell(line: str) -> list[dict]:
        for p in procs:
            p.stdin.write(line + "\n")
            p.stdin.flush()
        return [json.loads(p.stdout.readline()) for p in procs]

    try:
        assert all("ready" in r for r in [json.loads(p.stdout.readline()) for p in procs])
        trials_reports = []
        for k in range(trials):
            trials_reports.append(tell(f"go {k}"))
            tell("release")
    finally:
        for p in procs:
            p.stdin.close()
            p.wait(timeout=60)
    return trials_reports


if __name__ == "__main__":
    main()
