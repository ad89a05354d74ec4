"""Scale benchmark of the data path: the perturbation job and the selection rounds, old beside new.

  python jobs/bench_scale.py [--parts perturb select] [--sizes 2000 20000] [--pool-sizes 100000 1000000]

Writes jobs/results/bench_scale.json and .md. Figures: driver peak RSS (the aim: flat between sizes),
throughput, time to the first finished shard, and rows recomputed after a kill (perturbation); driver
peak RSS and wall time of rounds 0 and 1 (selection). See jobs/bench_scale_perturb.py and
jobs/bench_scale_select.py.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "jobs" / "results"
sys.path.insert(0, str(ROOT / "jobs"))


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--parts",
        nargs="+",
        choices=("perturb", "select"),
        default=["perturb", "select"],
        help="which benchmarks to run",
    )
    parser.add_argument(
        "--sizes", nargs="+", type=int, default=[2000, 20000], help="perturbation corpus sizes (documents)"
    )
    parser.add_argument(
        "--pool-sizes", nargs="+", type=int, default=[100_000, 1_000_000], help="selection pool sizes (instances)"
    )
    return parser.parse_args(argv)


def perturb_table(results: dict) -> str:
    rows = [
        "| data path | documents | docs/s | driver peak RSS (MiB) | first shard at | wall (s) |",
        "|---|---|---|---|---|---|",
    ]
    for label, runs in (("new", results["sizes"]), (f"old ({'52952ae'})", results["old"])):
        for size, f in runs.items():
            share = f"{f['first_shard_share']:.0%} of the run"
            rss, rate = f["driver_peak_rss_mib"], f["docs_per_s"]
            rows.append(f"| {label} | {size} | {rate} | {rss} | {share} | {f['wall_s']} |")
    kill = results["kill_and_resume"]
    rows.append("")
    rows.append(
        f"Killed at {kill['finished_before_kill']}/{kill['shards']} finished shards; the rerun redid "
        f"{kill['redone_after_rerun']} shards ({kill['finished_shards_redone']} of them finished before the kill)."
    )
    return "\n".join(rows)


def main(argv=None) -> int:
    args = parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    from hades_ray.plan.machine import describe_machine, machine_facts

    report = {"machine": machine_facts() | {"platform": platform.platform()}, "started": time.ctime()}
    sections = [
        "# Scale benchmark (`python jobs/bench_scale.py`)",
        "",
        f"Machine: {describe_machine(report['machine'])}.",
        "",
    ]
    if "perturb" in args.parts:
        import bench_scale_perturb

        report["perturb"] = bench_scale_perturb.run(args)
        sections += ["## Perturbation (micro models)", "", perturb_table(report["perturb"]), ""]
    if "select" in args.parts:
        import bench_scale_select

        report["select"] = bench_scale_select.run(args)
        sections += ["## Selection", "", report["select"].get("markdown", ""), ""]
    (RESULTS / "bench_scale.json").write_text(json.dumps(report, indent=2) + "\n")
    (RESULTS / "bench_scale.md").write_text("\n".join(sections) + "\n")
    print("\n".join(sections))
    return 0


if __name__ == "__main__":
    sys.exit(main())
