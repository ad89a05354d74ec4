"""The whole HaDes loop offline: perturb the demo corpus, three selection rounds with SIMULATED judges,
then the dataset. ``make demo-loop`` runs this; it prints each round's counts and agreement.

Where the offline model kit (``hades-ray models build``) is missing, the micro random-weight models are
built into the work directory for the perturbation job (the replacements are then nonsense words; the
MiniLM encoder used for detectors and similarity is the real pretrained one either way).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.pipeline import storage
from hades_ray.ray_runtime import init_ray
from hades_ray.pipeline.laps import Laps
from jobs.bench_common import kit_or_micro


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workdir", default="/tmp/hades_demo_loop", help="work directory (a rerun resumes it)")
    parser.add_argument("--docs", type=int, default=350, help="demo corpus documents to perturb")
    parser.add_argument("--rounds", type=int, default=3, help="selection rounds")
    parser.add_argument("--sizes", default="[80,120,120]", help="batch size per round")
    parser.add_argument(
        "--simulated-n-share",
        type=float,
        default=0.4,
        help="demo only: set the simulated judges' similarity cut at this quantile of the pool's "
        "similarities, so that about this share reads as N (micro models make nonsense "
        "replacements that a fixed cut would call H every time)",
    )
    parser.add_argument(
        "--noise", type=float, default=0.1, help="the simulated judges' flip rate (each judge's own is around it)"
    )
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="config override KEY=VALUE")
    args = parser.parse_args(argv)

    from hades_ray.annotate.export import export_items
    from hades_ray.pool.labels import round_labels
    from hades_ray.config import load_config
    from hades_ray.perturb.runner import run_perturb
    from hades_ray.select.cli import print_round
    from hades_ray.annotate.dataset import build_dataset
    from hades_ray.select.round import run_round
    from hades_ray.annotate.simulate import simulate_judgments
    from hades_ray.pool.layout import existing_rounds

    laps = Laps()
    workdir = Path(args.workdir)
    if not kit_or_micro(workdir / "hades_home"):
        print(f"offline model kit not built: using micro random-weight models under {workdir / 'hades_home'}")
    config = load_config(
        "local",
        None,
        [f"select.round_sizes={args.sizes}", "select.min_train_instances=20", "detect.epochs=2", *args.overrides],
    )
    init_ray(config.ray.address, config.ray.num_cpus)  # one cluster for every pass below
    laps.lap("ray_start")
    run_perturb(config, "demo", workdir / "pool", limit=args.docs)  # finished shards are skipped
    laps.lap("pool")
    print(f"pool ready after {laps.total():.0f} s")
    from hades_ray.pool.feature_job import compute_features

    similarity = compute_features(config, workdir, columns=["similarity"])["similarity"].astype(float)
    laps.lap("features")
    if args.simulated_n_share > 0:
        config.annotate.simulate_similarity = float(similarity.quantile(1 - args.simulated_n_share))
        print(
            f"SIMULATED judges call N at similarity >= {config.annotate.simulate_similarity:.3f} "
            f"(the pool's {1 - args.simulated_n_share:.0%} quantile)"
        )
    done = existing_rounds(workdir)
    for k in range(args.rounds):
        if k not in done or not (workdir / f"round-{k:03d}" / "round.json").is_file():
            print_round(run_round(config, workdir, k))
        laps.lap(f"round_{k}_select")
        for _attempt in range(2):  # the first panel of 4, then 2 more judges where they disagree
            if export_items(config, workdir, k, "csv")["items"]:
                report = simulate_judgments(config, workdir, k, noise=args.noise)
                print(f"  SIMULATED judges: {report['import']} {report['accepted']} judgments")
        laps.lap(f"round_{k}_judgments")
        print(f"  round {k} agreement (simulated judges): {json.dumps(round_labels(config, workdir, k)[1])}")
        print(f"  elapsed {laps.total():.0f} s")
    stats = build_dataset(config, workdir, workdir / "dataset")
    laps.lap("dataset")
    print(
        f"dataset: {stats['instances']} instances ({stats['H']} H, {stats['N']} N), splits "
        + ", ".join(f"{s}={v['instances']}" for s, v in stats["splits"].items())
        + f" -> {workdir / 'dataset'}"
    )
    print(f"demo loop finished in {laps.total():.0f} s (judgments SIMULATED)")
    print("seconds per pass: " + ", ".join(f"{name} {seconds:.0f}" for name, seconds in laps.laps.items()))
    storage.write(workdir / "timings.json", json.dumps(laps.laps, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
