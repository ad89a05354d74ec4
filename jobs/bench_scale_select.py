"""Selection at scale: driver peak RSS and wall time of rounds 0 and 1 on synthetic pools
(hades_ray/pool/synthetic.py), this checkout's data path beside the old one (commit 52952ae, from a git
worktree, at the smallest size only); every round in its own process, the driver. How each round runs:
hades_ray/docs/benchmarks.md. Writes jobs/results/bench_scale_select.{json,md}.
"""

from __future__ import annotations

import json
import sys
import time
import zlib
from pathlib import Path

# Appended, and no hades_ray import at the top: a child runs the hades_ray that its PYTHONPATH names.
sys.path.append(str(Path(__file__).resolve().parents[1]))

from jobs.bench_common import ROOT, in_child, machine_facts, machine_words, offline_env, options, peak_rss_mib
from jobs.bench_common import write_results

OLD_COMMIT = "52952ae"
SHARD_ROWS = 10_000
OVERRIDES = ["select.round_sizes=[400,2000]", "select.min_train_instances=20", "detect.backbone=local:mlm"]
OVERRIDES += ["detect.epochs=1", "detect.window=32", "detect.batch_size=32", "detect.freeze=all"]
OVERRIDES += ["detect.actors=2"]  # two scoring actors at half a CPU each, in both data paths
COMMAND = "python jobs/bench_scale_select.py --pool-sizes 100000 1000000 --old-tree /tmp/old-main"


FLAGS = {
    "--pool-sizes": ([100_000, 1_000_000], "pool instances"),
    "--work": ("/tmp/bench_scale_select", "scratch folder for pools and rounds"),
    "--old-tree": ("/tmp/old-main", f"a git worktree of {OLD_COMMIT}; '' skips old"),
}


# ---- the pools (children "setup") ----------------------------------------------------------------------


def setup_new(size: int, workdir: str) -> dict:
    from hades_ray.config import load_config
    from hades_ray.pool.synthetic import write_synthetic_pool

    write_synthetic_pool(load_config(overrides=OVERRIDES), workdir, size, SHARD_ROWS)
    return {"setup": workdir}


def old_meta(size: int, workdir: str) -> dict:
    """The old code's own marker contents of its features file (run by the old tree's child), for
    ``write_merged_pool``."""
    from hades_ray.config import load_config
    from hades_ray.select.features import _meta  # the old tree's (OLD_COMMIT)

    return {"setup": workdir, "meta": _meta(load_config(overrides=OVERRIDES), size)}


# ---- measured steps (children) -----------------------------------------------------------------------


def child_round(workdir: str, round_index: int) -> dict:
    from hades_ray.config import load_config
    from hades_ray.select.round import run_round

    config = load_config(overrides=OVERRIDES)
    started = time.perf_counter()
    summary = run_round(config, Path(workdir), round_index)  # on Ray in both data paths
    wall = time.perf_counter() - started
    result = {"wall_s": round(wall, 1), "driver_peak_rss_mib": round(peak_rss_mib()), "counts": summary["counts"]}
    return result | {"timings": summary.get("timings", {})}  # the old data path records no phases


def child_judge(workdir: str) -> dict:
    """Simulated judges on round 0's batch (not measured): H where the replacement's number is odd."""
    import pandas as pd

    from hades_ray.annotate.judgments import import_judgments, next_import_number

    try:
        from hades_ray.pool.consensus import item_table
        from hades_ray.pool.rounds import batch_items, load_judgments
    except ImportError:  # the old tree (OLD_COMMIT) has them in annotate/
        from hades_ray.annotate.consensus import item_table
        from hades_ray.annotate.judgments import batch_items, load_judgments
    from hades_ray.annotate.simulate import simulate_rows
    from hades_ray.config import load_config

    config, workdir = load_config(overrides=OVERRIDES), Path(workdir)
    items = batch_items(workdir, 0)
    odd = ["H" if zlib.crc32(str(i["replacement"]).encode()) % 2 else "N" for i in items]
    truth = pd.Series(odd, index=[str(i["id"]) for i in items])
    for _ in range(2):  # the first panel, then more judges where they disagree
        judged = load_judgments(workdir, 0)
        table = item_table(list(truth.index), judged, config.annotate)
        number = next_import_number(workdir / "round-000" / "judgments")
        rows = simulate_rows(truth, table, judged, config.annotate.max_judges, 0.1, config.seed, 0, number)
        if rows:
            import_judgments(config, workdir, 0, "bench-panel", simulated=True, rows=rows)
    return {"judged": len(items)}


def _spawn(args, impl: str, function, *arguments) -> dict:
    code = args.old_tree if impl == "old" else str(ROOT)
    env = offline_env(HADES_RAY_HOME=str(Path(args.work) / "home"))
    return in_child(function, *arguments, code=code, env=env, timeout=3600)


def measure(args, impl: str, size: int) -> dict:
    from hades_ray.pipeline import storage

    workdir = Path(args.work) / f"{impl}-{size}"
    storage.delete(workdir)
    setup = _spawn(args, impl, old_meta if impl == "old" else setup_new, size, str(workdir))
    if impl == "old":  # the old layout, written by this checkout's storage (the old tree has none)
        from hades_ray.pool.synthetic import write_merged_pool

        write_merged_pool(workdir, size, SHARD_ROWS, setup["meta"])
    rounds = {"round_0": _spawn(args, impl, child_round, str(workdir), 0)}
    _spawn(args, impl, child_judge, str(workdir))
    rounds["round_1"] = _spawn(args, impl, child_round, str(workdir), 1)
    shown = {k: {x: v[x] for x in ("wall_s", "driver_peak_rss_mib")} for k, v in rounds.items()}
    print(f"{impl} {size}: {json.dumps(shown)}", flush=True)
    return rounds


def run(args) -> dict:
    """The selection benchmark; ``args`` needs ``pool_sizes`` (and may carry ``work``, ``old_tree``)."""
    from hades_ray.pipeline import storage

    args.work = getattr(args, "work", None) or "/tmp/bench_scale_select"
    args.old_tree = getattr(args, "old_tree", "/tmp/old-main")
    storage.makedirs(args.work)
    home = Path(args.work) / "home"
    if not (home / "models" / "mlm" / "config.json").is_file():
        from hades_ray.models.micro import build_micro_kit

        build_micro_kit(home)  # every child's HADES_RAY_HOME (``_spawn``)
    results: dict = {"command": COMMAND, "shard_rows": SHARD_ROWS, "overrides": OVERRIDES, "new": {}}
    for size in sorted(args.pool_sizes):
        results["new"][str(size)] = measure(args, "new", size)
    if args.old_tree and not (Path(args.old_tree) / "hades_ray").is_dir():
        hint = f"git worktree add {args.old_tree} {OLD_COMMIT}"
        print(f"no worktree of {OLD_COMMIT} at {args.old_tree}: old figures skipped ({hint})")
    elif args.old_tree:
        results["old"] = {str(min(args.pool_sizes)): measure(args, "old", min(args.pool_sizes))}
    from hades_ray.select.scale_page import scale_notes, scale_page, scale_ratios

    results["ratios"], results["notes"] = scale_ratios(results), scale_notes(results)
    results["markdown"] = scale_page(results, OLD_COMMIT)
    return results


def main(argv=None) -> int:
    args = options(__doc__, FLAGS, argv)
    machine = machine_facts()  # before the runs: the load they start under
    results = run(args) | {"machine": machine}
    results["markdown"] = f"Machine: {machine_words(results)}.\n\n" + results["markdown"]
    write_results("bench_scale_select", results, "# Selection at scale\n\n" + results["markdown"] + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
