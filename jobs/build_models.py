"""Build the offline model kit (same as ``hades-ray models build``); flags pass through.

python jobs/build_models.py [--force] [--home DIR] [--mlm-steps N] [--gpt2-steps M] [--seed S]
"""

from __future__ import annotations

import sys

from hades_ray.cli import main

if __name__ == "__main__":
    sys.exit(main(["models", "build", *sys.argv[1:]]))
