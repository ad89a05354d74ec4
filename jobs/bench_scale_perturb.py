"""Scale benchmark of the perturbation job's data path (issue: the pool as a dataset).

With micro random-weight models (the model work is not what is measured), on leads of
../shared/data/enwiki2015_first_paragraphs.jsonl replicated with new ids to N documents:
  * driver peak RSS at two corpus sizes (the driver plans and merges; it must not grow with the corpus);
  * documents per second;
  * when the first shard finished, as a share of the run (shards finish one after another);
  * the driver killed at about 60% and the job rerun: shards finished before the kill are never redone.
Each run is its own process (its ``ru_maxrss`` is the driver's alone; Ray's workers are other processes).
The old data path (commit 52952ae, checked out into a git worktree) runs the smaller size beside it.
  python jobs/bench_scale.py --parts perturb [--sizes 2000 20000]
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "enwiki2015_first_paragraphs.jsonl"
OLD_COMMIT = "52952ae"
# Cheap model work so that thousands of documents fit these 2 cores: the data path is what is measured.
OVERRIDES = [
    "perturb.rank.num_candidates=1",
    "perturb.read.shard_size=250",
    "perturb.replace.max_length=128",
    "perturb.rank.max_length=32",
]


def make_corpus(docs: int, folder: Path) -> Path:
    """``docs`` leads: the shared file repeated, every copy with new ids."""
    lines = SHARED.read_text(encoding="utf-8").splitlines()
    path = folder / f"leads_{docs}.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for i in range(docs):
            record = json.loads(lines[i % len(lines)])
            record["id"] = f"r{i // len(lines)}-{record['id']}"
            out.write(json.dumps(record) + "\n")
    return path


def one_run(input_path: str, output: str, code_root: str) -> None:
    """In a fresh process: run the job once and print its figures as JSON (the driver's own peak RSS)."""
    sys.path.insert(0, code_root)
    from hades_ray.config import load_config
    from hades_ray.perturb.runner import run_perturb

    config = load_config("local", overrides=OVERRIDES)
    started = time.time()
    summary = run_perturb(config, input_path, output)
    ended = time.time()
    finish_times = sorted(json.loads(p.read_text()).get("finished_at", 0) for p in Path(output).glob("_markers/*.json"))
    if not finish_times or not finish_times[0]:  # the old data path stamps no time: the marker files' mtimes
        finish_times = sorted(p.stat().st_mtime for p in Path(output).glob("_markers/*.json"))
    figures = {
        "read": summary["read"],
        "kept": summary["kept"],
        "shards": summary["shards"],
        "wall_s": round(ended - started, 1),
        "docs_per_s": round(summary["read"] / (ended - started), 2),
        "first_shard_share": round((finish_times[0] - started) / (ended - started), 3),
        "driver_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    print("FIGURES " + json.dumps(figures), flush=True)


def _env(home: str) -> dict:
    env = dict(os.environ, HADES_RAY_HOME=home, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")
    env.update(HF_HUB_DISABLE_PROGRESS_BARS="1", RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
    env.pop("RAY_ADDRESS", None)
    return env


def _spawn(input_path: Path, output: Path, code_root: Path, home: str) -> subprocess.Popen:
    command = [sys.executable, __file__, "--one", str(input_path), str(output), str(code_root)]
    env = _env(home) | {"PYTHONPATH": str(code_root)}
    # cwd: Ray puts the driver's working directory first on its workers' path, so the code under test
    # must be what that directory holds.
    return subprocess.Popen(
        command,
        env=env,
        cwd=code_root,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )


def measured(input_path: Path, output: Path, code_root: Path, home: str) -> dict:
    process = _spawn(input_path, output, code_root, home)
    out = process.communicate()[0]
    lines = [line for line in out.splitlines() if line.startswith("FIGURES ")]
    if process.returncode or not lines:
        raise RuntimeError(f"benchmark run failed ({process.returncode}): {out[-2000:]}")
    return json.loads(lines[-1].removeprefix("FIGURES "))


def kill_and_resume(input_path: Path, output: Path, home: str, share: float = 0.6) -> dict:
    """Kill the driver (and its local Ray) once ``share`` of the shards have markers, then rerun."""
    lines = sum(1 for _ in input_path.open())
    total = -(-lines // 250)
    process = _spawn(input_path, output, ROOT, home)
    while process.poll() is None and len(list(output.glob("_markers/*.json"))) < share * total:
        time.sleep(0.5)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    finished_at_kill = len(list(output.glob("_markers/*.json")))
    (output / "_lock.json").unlink(missing_ok=True)  # the killed run's lock: its pid is gone on this host anyway
    rerun = measured(input_path, output, ROOT, home)
    return {
        "shards": total,
        "finished_before_kill": finished_at_kill,
        "redone_after_rerun": rerun["shards"]["processed_now"],
        "finished_shards_redone": rerun["shards"]["processed_now"] - (total - finished_at_kill),
        "rows_recomputed_at_most": (rerun["shards"]["processed_now"]) * 250,
        "rerun": rerun,
    }


def old_worktree() -> Path:
    path = Path(tempfile.gettempdir()) / "hades_ray_old_52952ae"
    if not path.is_dir():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), OLD_COMMIT], check=True)
    return path


def run(args) -> dict:
    """Every perturbation figure of the scale benchmark (called by jobs/bench_scale.py)."""
    from hades_ray.models.micro import build_micro_kit

    work = Path(tempfile.mkdtemp(prefix="bench_scale_perturb_"))
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
        results["old"][str(min(args.sizes))] = measured(small, work / "out_old", old_worktree(), home)
    except (RuntimeError, subprocess.CalledProcessError) as error:
        results["old_error"] = str(error)[-500:]
    return results


if __name__ == "__main__" and len(sys.argv) == 5 and sys.argv[1] == "--one":
    one_run(sys.argv[2], sys.argv[3], sys.argv[4])
