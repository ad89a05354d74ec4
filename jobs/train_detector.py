"""Entry point for `ray job submit -- python jobs/train_detector.py ...`: the arguments of `hades-ray train`."""

import sys

from hades_ray.cli import main

if __name__ == "__main__":
    sys.exit(main(["train", *sys.argv[1:]]))
