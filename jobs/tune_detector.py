"""Thin entry point: the detector sweep (same as ``hades-ray tune``), for ``ray job submit``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.cli import main

if __name__ == "__main__":
    sys.exit(main(["tune", *sys.argv[1:]]))
