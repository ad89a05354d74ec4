"""Entry point for `ray job submit -- python jobs/evaluate_detector.py ...`: the arguments of `hades-ray evaluate`."""

import sys

from hades_ray.cli import main

if __name__ == "__main__":
    sys.exit(main(["evaluate", *sys.argv[1:]]))
