"""Entry point for `ray job submit -- python jobs/perturb.py ...`: the arguments of `hades-ray perturb`."""

import sys

from hades_ray.cli import main

if __name__ == "__main__":
    sys.exit(main(["perturb", *sys.argv[1:]]))
