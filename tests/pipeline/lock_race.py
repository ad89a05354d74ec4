"""One contender of the lock race (tests/pipeline/test_lock.py, jobs/bench_driver.py): at each trial's
start time it takes ``OutputLock`` of ``PREFIX/trial-K`` and holds it for ``--hold`` seconds if it got
it, printing one JSON line per trial (``got`` true, or the refusal naming the holder).
A trial whose lock is already there, left by a dead holder whose lease ran out, is a race to take it over."""

from __future__ import annotations

import argparse
import json
import os
import time

from hades_ray.pipeline.errors import OutputLockedError
from hades_ray.pipeline.lock import OutputLock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prefix", required=True, help="s3:// folder holding one output per trial")
    parser.add_argument("--trials", type=int, default=10, help="how many races")
    parser.add_argument("--start", type=float, required=True, help="time.time() of the first race")
    parser.add_argument("--step", type=float, default=1.0, help="seconds between the races")
    parser.add_argument("--hold", type=float, default=0.5, help="seconds a winner holds the lock")
    parser.add_argument("--lease", type=float, default=60.0, help="the lock's lease in seconds")
    args = parser.parse_args()
    from hades_ray.pipeline import s3

    s3.client()  # made before the first race, so that no contender is late by its import
    for trial in range(args.trials):
        lock = OutputLock(f"{args.prefix}/trial-{trial:03d}", lease_s=args.lease)
        time.sleep(max(0.0, args.start + trial * args.step - time.time()))
        try:
            lock.acquire()
        except OutputLockedError as error:
            print(json.dumps({"trial": trial, "pid": os.getpid(), "got": False, "error": str(error)}), flush=True)
            continue
        print(json.dumps({"trial": trial, "pid": os.getpid(), "got": True, "at": time.time()}), flush=True)
        time.sleep(args.hold)
        lock.release()


if __name__ == "__main__":
    main()
