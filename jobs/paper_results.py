"""Record the paper's studies as results pages: an analyses folder (``hades-ray reproduce context`` and
``reproduce decoding`` output) as jobs/results/analyses.{json,md} with context_length.png and
decoding.png, and a round-detector folder (``hades-ray reproduce round-detector`` output) as
jobs/results/round_detector.{json,md}. The figures are the folders' own; ``write_results`` stamps the
commit this checkout is at, so record from the code that made them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.pipeline import storage  # noqa: E402
from jobs.bench_common import RESULTS, write_results  # noqa: E402


def record_analyses(folder: Path) -> None:
    from hades_ray.reproduce.analyses import ANALYSES, analyses_markdown

    results = json.loads((folder / ANALYSES).read_text(encoding="utf-8"))
    title = f"Analyses (hades-ray reproduce context and decoding, from {folder})"
    write_results("analyses", results, analyses_markdown(results, title))
    for name in ("context_length.png", "decoding.png"):
        if (folder / name).is_file():
            storage.write(RESULTS / name, (folder / name).read_bytes())


def record_round_detector(folder: Path) -> None:
    from hades_ray.reproduce.round_detector import RESULTS as NAME

    rows = json.loads((folder / f"{NAME}.json").read_text(encoding="utf-8"))
    write_results(NAME, rows, (folder / f"{NAME}.md").read_text(encoding="utf-8"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--analyses", help="an analyses folder holding analyses.json")
    parser.add_argument("--round-detector", help="a `reproduce round-detector` output folder")
    args = parser.parse_args(argv)
    if not (args.analyses or args.round_detector):
        parser.error("give --analyses, --round-detector or both")
    if args.analyses:
        record_analyses(Path(args.analyses))
    if args.round_detector:
        record_round_detector(Path(args.round_detector))
    return 0


if __name__ == "__main__":
    sys.exit(main())
