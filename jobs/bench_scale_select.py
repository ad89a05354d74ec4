"""Selection at scale: driver peak RSS and wall time of rounds 0 and 1 on synthetic pools, new beside old.

Each pool is written in the perturbation job's layout (``instances/part-NNNNN.parquet`` + markers), its
features stored in advance (spaCy over a million windows does not fit 2 cores; tests/select/test_pool.py
tests the features job). Round 0 samples 400; simulated judges label them; round 1 trains the micro BERT
(``hades_ray/models/micro.py``, one epoch, head only) on Ray Train, scores the whole pool and selects
2,000. Every round runs in its own process, the driver, so its peak RSS is the driver's alone.

The old data path (commit 52952ae, before the pool was a dataset) is measured at the smallest size only,
from a git worktree (``git worktree add /tmp/old-main 52952ae``) on the same pool written as its merged
``instances.jsonl`` and ``features/features.parquet``. Writes jobs/results/bench_scale_select.{json,md}.
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
    """The old code's own marker contents of its features file (run by the old tree's child)."""
    from hades_ray.config import load_config
    from hades_ray.select.features import _meta  # the old tree's (OLD_COMMIT)

    return {"setup": workdir, "meta": _meta(load_config(overrides=OVERRIDES), size)}


def setup_old(size: int, workdir: Path, meta: dict) -> None:
    """The old layout of the same pool, written by this checkout's storage (the old tree has none):
    merged ``instances.jsonl`` and ``features/features.parquet`` with ``meta`` (``old_meta``) beside it."""
    import pandas as pd

    from hades_ray.pipeline import storage
    from hades_ray.pool.synthetic import synthetic_shard

    frames = []
    with storage.open_atomic(workdir / "pool" / "instances.jsonl", "w") as handle:
        for index in range((size + SHARD_ROWS - 1) // SHARD_ROWS):
            instances, features = synthetic_shard(index, min(SHARD_ROWS, size - index * SHARD_ROWS), SHARD_ROWS)
            for r in instances:
                words = list(r["words"])
                words[r["start"]] = f"==={words[r['start']]}==="
                record = {"replaced": " ".join(words), "replaced_ids": [r["start"], r["end"]], "hallucination": -1}
                record |= {k: r[k] for k in ("id", "doc_id", "original_span", "replacement")}
                handle.write(json.dumps(record) + "\n")
            frames.append(pd.DataFrame(features).drop(columns=["repl_pos"]))
    with storage.open_atomic(workdir / "features" / "features.parquet", "wb") as handle:
        pd.concat(frames).to_parquet(handle, index=False)
    storage.write(workdir / "features" / "features.json", json.dumps(meta))


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
    if impl == "old":
        setup_old(size, workdir, setup["meta"])
    rounds = {"round_0": _spawn(args, impl, child_round, str(workdir), 0)}
    _spawn(args, impl, child_judge, str(workdir))
    rounds["round_1"] = _spawn(args, impl, child_round, str(workdir), 1)
    shown = {k: {x: v[x] for x in ("wall_s", "driver_peak_rss_mib")} for k, v in rounds.items()}
    print(f"{impl} {size}: {json.dumps(shown)}", flush=True)
    return rounds


def markdown(results: dict) -> str:
    from hades_ray.markdown import pipe_table

    rows = []
    for label, runs in (("new", results["new"]), (f"old ({OLD_COMMIT})", results.get("old", {}))):
        for size, rounds in runs.items():
            for name, r in rounds.items():
                t, size_ = r.get("timings", {}), f"{int(size):,}"
                rows.append([label, size_, name[-1], r["wall_s"], r["driver_peak_rss_mib"], r["counts"]["batch"]])
                rows[-1] += [t.get("scores_s", "-") if name == "round_1" else "-", t.get("selection_pass_s", "-")]
    columns = ["data path", "pool instances", "round", "wall (s)", "driver peak RSS (MiB)", "batch"]
    lines = pipe_table([*columns, "scoring pass (s)", "selection pass (s)"], rows)
    lines += ["", f"Reproduce: `{COMMAND}` (micro detector, features stored in advance; 2 CPU cores)."]
    lines += [f"- {key}: {value}" for key, value in results.get("ratios", {}).items()]
    return "\n".join(lines + [f"- {note}" for note in results.get("notes", [])])


def ratios(results: dict) -> dict:
    new = results["new"]
    sizes = sorted(new, key=int)
    if len(sizes) < 2:
        return {}
    small, large, span = new[sizes[0]], new[sizes[-1]], f"{int(sizes[-1]):,} / {int(sizes[0]):,}"
    out = {}
    for r in ("round_0", "round_1"):
        out[f"new {r} driver RSS, {span}"] = round(large[r]["driver_peak_rss_mib"] / small[r]["driver_peak_rss_mib"], 2)
        out[f"new {r} wall, {span}"] = round(large[r]["wall_s"] / small[r]["wall_s"], 2)
    return out


def notes(results: dict) -> list[str]:
    """Derived figures: what the old path holds per instance, and the per-row cost of the scaling passes."""
    new, old = results["new"], results.get("old", {})
    sizes = sorted(new, key=int)
    lines = []
    for size, rounds in old.items():
        if size in new:
            for r in ("round_0", "round_1"):
                extra = rounds[r]["driver_peak_rss_mib"] - new[size][r]["driver_peak_rss_mib"]
                per = extra * 1024 / int(size)
                lines.append(
                    f"old {r} holds {extra} MiB more in the driver at {int(size):,} instances (~{per:.1f} KiB per "
                    f"instance: ~{per * 1e6 / 1024**2:.1f} GiB at 1,000,000 and ~{per * 5e6 / 1024**2:.0f} GiB at "
                    "5,000,000 if it grew the same way)"
                )
    if len(sizes) >= 2:
        small, large = new[sizes[0]]["round_1"], new[sizes[-1]]["round_1"]
        rows = int(sizes[-1]) - int(sizes[0])
        for phase in ("scores_s", "selection_pass_s"):
            a, b = small.get("timings", {}).get(phase), large.get("timings", {}).get(phase)
            if a is not None and b is not None:
                lines.append(f"round 1 {phase[:-2]}: {(b - a) / rows * 1e6:.0f} us per extra pool instance")
    return lines


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
    results["ratios"] = ratios(results)
    results["notes"] = notes(results)
    results["markdown"] = markdown(results)
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
