"""The whole HaDes loop offline (``make demo-loop``): perturb the demo corpus, three selection rounds with
SIMULATED judges, then the dataset (hades_ray/reproduce/demo_loop.py); prints each round's counts and
agreement. Without the offline kit, micro random-weight models are built into the work directory (nonsense
replacements; the MiniLM encoder of the detectors and similarity is the real one either way).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.pipeline.laps import Laps
from hades_ray.ray_runtime import init_ray
from jobs.bench_common import kit_or_micro, options


def main(argv=None) -> int:
    share = "demo only: set the simulated judges' similarity cut at this quantile of the pool's similarities, so "
    share += "that about this share reads as N (micro models make nonsense replacements that a fixed cut would call H "
    args = options(__doc__, {
        "--workdir": ("/tmp/hades_demo_loop", "work directory (a rerun resumes it)"),
        "--docs": (350, "demo corpus documents to perturb"),
        "--rounds": (3, "selection rounds"),
        "--sizes": ("[80,120,120]", "batch size per round"),
        "--simulated-n-share": (0.4, share + "every time)"),
        "--noise": (0.1, "the simulated judges' flip rate (each judge's own is around it)"),
        "--set": ([], "config override KEY=VALUE", {"dest": "overrides", "action": "append"}),
    }, argv)  # fmt: skip

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
