"""Scale benchmark of the data path: the perturbation job (micro models, the enwiki leads repeated to N
documents: driver peak RSS, documents/s, the first shard's finish, a kill at 60% and the rerun) and the
selection rounds (jobs/bench_scale_select.py), old (commit 52952ae) beside new. Writes
jobs/results/bench_scale.{json,md}; how each run is made: hades_ray/docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

# Appended, and no hades_ray import at the top: a child runs the hades_ray of the tree it is given.
sys.path.append(str(Path(__file__).resolve().parents[1]))

from jobs.bench_common import ENWIKI, ROOT, child_command, in_child, machine_facts, machine_words, offline_env, options
from jobs.bench_common import page, peak_rss_mib, scratch, worktree, write_results

OLD_COMMIT = "52952ae"
# Cheap model work so that thousands of documents fit these 2 cores: the data path is what is measured.
OVERRIDES = [
    "perturb.rank.num_candidates=1",
    "perturb.read.shard_size=250",
    "perturb.replace.max_length=128",
    "perturb.rank.max_length=32",
]


FLAGS = {
    "--parts": (["perturb", "select"], "which benchmarks to run", {"choices": ["perturb", "select"]}),
    "--sizes": ([2000, 20000], "perturbation corpus sizes (docs)"),
    "--pool-sizes": ([100_000, 1_000_000], "selection pool sizes (instances)"),
}


def make_corpus(docs: int, folder: Path) -> Path:
    """``docs`` leads: the shared file repeated, every copy with new ids."""
    from hades_ray.io.leads import repeated_leads

    return repeated_leads(ENWIKI, docs, folder / f"leads_{docs}.jsonl")


def one_run(input_path: str, output: str) -> dict:
    """In a fresh process (``in_child``): run the job once; its figures (the driver's own peak RSS)."""
    from hades_ray.config import load_config
    from hades_ray.perturb.runner import run_perturb

    config = load_config("local", overrides=OVERRIDES)
    started = time.time()
    summary = run_perturb(config, input_path, output)
    ended = time.time()
    finish_times = sorted(json.loads(p.read_text()).get("finished_at", 0) for p in Path(output).glob("_markers/*.json"))
    if not finish_times or not finish_times[0]:  # the old data path stamps no time: the marker files' mtimes
        finish_times = sorted(p.stat().st_mtime for p in Path(output).glob("_markers/*.json"))
    wall = ended - started
    figures = {key: summary[key] for key in ("read", "kept", "shards")} | {"wall_s": round(wall, 1)}
    figures |= {"docs_per_s": round(summary["read"] / wall, 2)}
    figures |= {"first_shard_share": round((finish_times[0] - started) / wall, 3)}
    return figures | {"driver_peak_rss_mib": round(peak_rss_mib(), 1)}


def _env(home: str) -> dict:
    """A child run's environment: no Ray address (each child starts its own local Ray). Its cwd is the code
    root under test (``in_child``): Ray puts the driver's working directory first on its workers' path."""
    env = offline_env(HADES_RAY_HOME=home, PYTHONUNBUFFERED="1", RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
    env.pop("RAY_ADDRESS", None)
    return env


def measured(input_path: Path, output: Path, code_root: Path, home: str) -> dict:
    return in_child(one_run, str(input_path), str(output), code=code_root, env=_env(home), start_new_session=True)


def kill_and_resume(input_path: Path, output: Path, home: str, share: float = 0.6) -> dict:
    """Kill the driver (and its local Ray) once ``share`` of the shards have markers, then rerun."""
    from hades_ray.pipeline import storage

    lines = sum(1 for _ in input_path.open())
    total = -(-lines // 250)
    command, env = child_command(one_run, str(input_path), str(output)), _env(home) | {"PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT,
                               start_new_session=True)  # fmt: skip
    while process.poll() is None and len(list(output.glob("_markers/*.json"))) < share * total:
        time.sleep(0.5)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    finished_at_kill = len(list(output.glob("_markers/*.json")))
    storage.delete(output / "_lock.json")  # the killed run's lock: its pid is gone on this host anyway
    rerun = measured(input_path, output, ROOT, home)
    redone = rerun["shards"]["processed_now"]
    return {"shards": total, "finished_before_kill": finished_at_kill, "redone_after_rerun": redone,
            "finished_shards_redone": redone - (total - finished_at_kill), "rows_recomputed_at_most": redone * 250,
            "rerun": rerun}  # fmt: skip


def run_perturb_part(args) -> dict:
    """Every perturbation figure of the scale benchmark."""
    from hades_ray.models.micro import build_micro_kit

    work = scratch("bench_scale_perturb_")
    home = str(work / "home")
    build_micro_kit(Path(home))
    results: dict = {"overrides": OVERRIDES, "sizes": {}, "old": {}}
    for size in args.sizes:
        corpus = make_corpus(size, work)
        print(f"perturbation: {size} documents (new data path)", flush=True)
        results["sizes"][str(size)] = measured(corpus, work / f"out_{size}", ROOT, home)
        print(json.dumps(results["sizes"][str(size)]), flush=True)
    small = make_corpus(min(args.sizes), work)
    print("perturbation: kill at 60% and rerun", flush=True)
    results["kill_and_resume"] = kill_and_resume(small, work / "out_kill", home)
    print(f"perturbation: {min(args.sizes)} documents (old data path, {OLD_COMMIT})", flush=True)
    try:
        results["old"][str(min(args.sizes))] = measured(small, work / "out_old", worktree(OLD_COMMIT), home)
    except (RuntimeError, subprocess.CalledProcessError) as error:
        results["old_error"] = str(error)[-500:]
    return results


def perturb_table(results: dict) -> str:
    from hades_ray.markdown import pipe_table

    rows = []
    for label, runs in (("new", results["sizes"]), (f"old ({OLD_COMMIT})", results["old"])):
        for size, f in runs.items():
            share = f"{f['first_shard_share']:.0%} of the run"
            rows.append([label, size, f["docs_per_s"], f["driver_peak_rss_mib"], share, f["wall_s"]])
    kill = results["kill_and_resume"]
    columns = ["data path", "documents", "docs/s", "driver peak RSS (MiB)", "first shard at", "wall (s)"]
    return page(
        pipe_table(columns, rows),
        f"Killed at {kill['finished_before_kill']}/{kill['shards']} finished shards; the rerun redid "
        f"{kill['redone_after_rerun']} shards ({kill['finished_shards_redone']} of them finished before the kill).",
    ).removesuffix("\n")


def main(argv=None) -> int:
    args = options(__doc__, FLAGS, argv)
    report = {"machine": machine_facts() | {"platform": platform.platform()}, "started": time.ctime()}
    sections = ["# Scale benchmark (`python jobs/bench_scale.py`)", f"Machine: {machine_words(report)}."]
    if "perturb" in args.parts:
        report["perturb"] = run_perturb_part(args)
        sections += ["## Perturbation (micro models)", perturb_table(report["perturb"])]
    if "select" in args.parts:
        from jobs import bench_scale_select

        report["select"] = bench_scale_select.run(args)
        sections += ["## Selection", report["select"].get("markdown", "")]
    write_results("bench_scale", report, page(*sections) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
