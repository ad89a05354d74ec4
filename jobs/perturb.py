"""Entry point for `ray job submit -- python jobs/perturb.py --input ... --output ...`.

On a cluster, Ray is joined through RAY_ADDRESS (set by the Jobs API); locally a private cluster on
127.0.0.1 is started. The arguments are those of `hades-ray perturb`.
"""

import sys

from hades_ray.cli import main

if __name__ == "__main__":
    sys.exit(main(["perturb", *sys.argv[1:]]))
