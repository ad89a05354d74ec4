"""Entry point for `ray job submit -- python jobs/predict_detector.py ...`: the arguments of `hades-ray predict`."""

import sys

from hades_ray.cli import main

if __name__ == "__main__":
    sys.exit(main(["predict", *sys.argv[1:]]))
