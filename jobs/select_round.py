"""Thin entry point: one selection round (same as ``hades-ray round``), for ``ray job submit``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.cli import main

if __name__ == "__main__":
    sys.exit(main(["round", *sys.argv[1:]]))
