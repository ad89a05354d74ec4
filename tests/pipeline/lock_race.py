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


if __name__ == "__main__":
    main()
