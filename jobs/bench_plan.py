"""Capacity-planner benchmark: REPLACE/RANK throughput of paper-sized random-weight models and of the offline
kit on this machine's CPU, each from a ``hades-ray plan`` run, and the plans they give for the paper's pool and
for Wiki-40B-en (hades_ray/docs/benchmarks.md says how each run is set up). Writes
jobs/results/bench_plan.json and .md; about 3-5 minutes on 2 cores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.pipeline import storage
from hades_ray.pipeline.laps import Laps
from hades_ray.plan.benchmark import PAPER_POOL, WIKI40B_EN_TRAIN, benchmark_page, corpus_plans_of
from jobs.bench_common import ENWIKI, ROOT, machine_facts, offline_env, options, write_results

KIT = ["--set", "models.mlm=local:mlm", "--set", "models.causal_lm=local:gpt2"]

FLAGS = {
    "--sample": (300, "enwiki rows counted and replayed (seeded sample)"),
    "--demo-sample": (500, "demo-corpus rows counted (seeded sample)"),
    "--measure-seconds": (6.0, "time budget per model stage"),
    "--shard-rows": (400, "enwiki rows of the shard where REPLACE batch sizes are compared"),
}


def plan_run(args: list[str], out: Path) -> dict:
    """One ``hades-ray plan`` run in its own process (so its peak memory is its own); the result JSON."""
    command = [sys.executable, "-m", "hades_ray", "plan", *args, "--output", str(out)]
    laps = Laps()
    subprocess.run(command, check=True, cwd=ROOT, env=offline_env(), stdout=subprocess.DEVNULL, timeout=900)
    result = json.loads(out.read_text(encoding="utf-8"))
    shown = ["hades-ray", "plan", *(os.path.relpath(a, ROOT) if a.startswith(str(ROOT.parent)) else a for a in args)]
    return result | {"command": " ".join(shown), "wall_s": round(laps.lap(), 1)}


def run_all(args, tmp: Path) -> dict:
    machine = machine_facts()  # before the runs: the load they start under
    common = ["--input", str(ENWIKI), "--sample", str(args.sample), "--preset", "paper", *KIT]
    common += ["--perturbed-docs", str(PAPER_POOL), "--measure-seconds", str(args.measure_seconds)]
    # The paper preset's 14 rounds over a 1M pool (select.schedule), screened by the round detector's
    # backbone: bert-base-sized for the paper, the kit's MiniLM for the kit (bert-base-cased is a hub model).
    rounds = ["--pool-instances", str(PAPER_POOL), "--rounds", "14"]
    paper = plan_run([*common, "--lm-context", "1024", "--measure", "paper-sized", *rounds], tmp / "paper.json")
    kit = plan_run([*common, "--measure", *rounds, "--set", "select.detector_backbone=local:minilm"], tmp / "kit.json")
    speed = paper["throughput"]
    given = ["--mlm-tokens-per-s", str(speed["mlm_tokens_per_s"]), "--lm-tokens-per-s", str(speed["lm_tokens_per_s"])]
    demo = ["--input", "demo", "--sample", str(args.demo_sample), "--preset", "paper", *KIT, "--lm-context", "1024"]
    demo = plan_run([*demo, "--corpus-docs", str(WIKI40B_EN_TRAIN), *given], tmp / "demo.json")
    from hades_ray.config import load_config
    from hades_ray.plan.count import batch_size_counts, load_tokenizers

    # REPLACE's forwards as its batch grows, on one shard of --shard-rows enwiki rows
    overrides = [item for item in KIT if item != "--set"] + [f"perturb.read.shard_size={args.shard_rows}"]
    config = load_config("paper", overrides=overrides)
    tokenizers, sizes = load_tokenizers(config, lm_context=1024), [32, 128, args.shard_rows]
    plans = corpus_plans_of(paper, demo, {"paper_sized_cpu_core": paper, "kit_cpu_core": kit})
    return {
        "machine": machine,
        "runs": {"paper_sized": paper, "kit": kit, "demo_counts": demo},
        "replace_batch_size": batch_size_counts(config, str(ENWIKI), tokenizers, args.shard_rows, sizes),
        "plans": plans,
    }


def main(argv=None) -> int:
    args = options(__doc__, FLAGS, argv)
    if not ENWIKI.is_file():
        print(f"bench_plan: {ENWIKI} is absent; this benchmark needs the shared enwiki sample", file=sys.stderr)
        return 2
    laps = Laps()
    with storage.scratch_folder("bench_plan_") as tmp:
        results = run_all(args, Path(tmp))
    results["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    results["wall_s"] = round(laps.lap(), 1)
    write_results("bench_plan", results, benchmark_page(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
