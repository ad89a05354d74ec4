"""The whole HaDes loop offline: perturb the demo corpus, three selection rounds with SIMULATED judges,
then the dataset (hades_ray/reproduce/demo_loop.py). ``make demo-loop`` runs this; it prints each round's
counts and agreement.

Where the offline model kit (``hades-ray models build``) is missing, the micro random-weight models are
built into the work directory for the perturbation job (the replacements are then nonsense words; the
MiniLM encoder used for detectors and similarity is the real pretrained one either way).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.pipeline.laps import Laps
from hades_ray.ray_runtime import init_ray
from jobs.bench_common import kit_or_micro


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    flag = parser.add_argument
    flag("--workdir", default="/tmp/hades_demo_loop", help="work directory (a rerun resumes it)")
    flag("--docs", type=int, default=350, help="demo corpus documents to perturb")
    flag("--rounds", type=int, default=3, help="selection rounds")
    flag("--sizes", default="[80,120,120]", help="batch size per round")
    share = "demo only: set the simulated judges' similarity cut at this quantile of the pool's similarities, so "
    share += "that about this share reads as N (micro models make nonsense replacements that a fixed cut would call H "
    flag("--simulated-n-share", type=float, default=0.4, help=share + "every time)")
    flag("--noise", type=float, default=0.1, help="the simulated judges' flip rate (each judge's own is around it)")
    flag("--set", dest="overrides", action="append", default=[], help="config override KEY=VALUE")
    args = parser.parse_args(argv)

    from hades_ray.config import load_config
    from hades_ray.reproduce.demo_loop import demo_loop
    from hades_ray.select.cli import print_round

    laps, workdir = Laps(), Path(args.workdir)
    if not kit_or_micro(workdir / "hades_home"):
        print(f"offline model kit not built: using micro random-weight models under {workdir / 'hades_home'}")
    overrides = [f"select.round_sizes={args.sizes}", "select.min_train_instances=20", "detect.epochs=2"]
    config = load_config("local", None, [*overrides, *args.overrides])
    init_ray(config.ray.address, config.ray.num_cpus)  # one cluster for every pass below
    laps.lap("ray_start")
    demo_loop(config, workdir, args.docs, args.rounds, args.simulated_n_share, args.noise, laps, print, print_round)
    return 0


if __name__ == "__main__":
    sys.exit(main())
