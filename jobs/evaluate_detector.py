"""Entry point for `ray job submit -- python jobs/evaluate_detector.py ...`: the arguments of `hades-ray evaluate`.

On a cluster, Ray is joined through RAY_ADDRESS (set by the Jobs API); locally a private cluster on
127.0.0.1 is started.
"""

import sys

from hades_ray.cli import main

if __name__ == "__main__":
    sys.exit(main(["evaluate", *sys.argv[1:]]))
