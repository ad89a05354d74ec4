"""The report's sweeps on the demo pool and the offline model kit: context length (Ray Tune) and
decoding strategies (jobs/context_sweep.py, jobs/decoding_sweep.py: experiments that train and perturb, so
they live here and hades_ray/report/ only reads their results). Writes OUTPUT/analyses.json, which
`hades-ray report --analyses` reads.

    python jobs/analyses.py --pool out/demo --output out/analyses

Labels are the learnability labels (replaced spans H, untouched content words N; no human judgments),
and the report says so. A part whose results exist is reused unless --force. Sizes are small so that
both parts finish in minutes on 2 shared cores; raise --docs / --max-instances / --epochs elsewhere.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

for key, value in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"), ("HF_HUB_DISABLE_PROGRESS_BARS", "1")):
    os.environ.setdefault(key, value)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pool", default="out/demo", help="perturbation output for the context sweep (make demo)")
    parser.add_argument("--output", default="out/analyses", help="folder for analyses.json and the runs behind it")
    parser.add_argument("--windows", default="32,64,128", help="context windows (subword tokens), comma-separated")
    parser.add_argument("--epochs", type=int, default=2, help="training epochs of each context-sweep trial")
    parser.add_argument("--max-instances", type=int, default=400, help="learnability instances for the context sweep")
    parser.add_argument("--docs", type=int, default=100, help="demo input rows perturbed per decoding strategy")
    parser.add_argument("--candidates", type=int, default=4, help="candidates per document in the decoding runs")
    parser.add_argument("--feature-window", type=int, default=128, help="MLM tokens around a span (LR features)")
    parser.add_argument("--skip-context", action="store_true", help="leave the context-length sweep out")
    parser.add_argument("--skip-decoding", action="store_true", help="leave the decoding-strategy sweep out")
    parser.add_argument("--force", action="store_true", help="rerun parts whose results exist")
    parser.add_argument("--record", action="store_true", help="also copy analyses.json to jobs/results/")
    parser.add_argument("--seed", type=int, default=0, help="seed of masks, samples, splits and training")
    return parser.parse_args(argv)


def overrides(args) -> list[str]:
    return [
        f"seed={args.seed}",
        f"detect.epochs={args.epochs}",
        f"detect.feature_window={args.feature_window}",
        "ray.num_cpus=2",
    ]


def part(name: str, path: Path, force: bool, make) -> dict:
    """A part's results: reused from ``path`` when there, else made, timed and saved."""
    from jobs.context_sweep import save

    if path.is_file() and not force:
        print(f"{name}: reusing {path} (--force reruns it)", flush=True)
        return json.loads(path.read_text(encoding="utf-8"))
    print(f"{name}: running", flush=True)
    began = time.perf_counter()
    results = make()
    results["seconds"] = round(time.perf_counter() - began, 1)
    save(results, path)
    print(f"{name}: done in {results['seconds']:.0f} s -> {path}", flush=True)
    return results


LABELS_NOTE = "learnability labels (replaced spans H, untouched content words N), no human judgments"


def results_markdown(results: dict) -> str:
    """jobs/results/analyses.md: the measured figures, as the report shows them."""
    from hades_ray.report.model import fmt

    lines = ["# Analyses (jobs/analyses.py)", "", f"Command: `{' '.join(['python', *sys.argv])}`", ""]
    parts = {k: results[k]["seconds"] for k in ("decoding", "context_length") if k in results}
    lines.append(
        "Wall seconds of the run that made each part (a reused part keeps its own): "
        + ", ".join(f"{k} {v:.0f}" for k, v in parts.items())
        + f"; 2 cores shared with other jobs. Labels: {LABELS_NOTE}."
    )
    if "decoding" in results:
        d = results["decoding"]
        title = (
            f"## Decoding strategies ({d['documents']} documents, {d['candidates']} candidates, {d['seconds']:.0f} s"
            + (", pools of an earlier run reused)" if any(s.get("pool_reused") for s in d["strategies"]) else ")")
        )
        header = "| decoding | kept ppl (median) | distinct / replacements | artifact rate | LR AUC [95% CI] | test |"
        lines += ["", title, "", header, "|---|---|---|---|---|---|"]
        for s in d["strategies"]:
            lines.append(
                f"| {s['decoding']} ({s['settings']}) | {s['kept_ppl_median']:.1f} | {s['distinct_replacements']}"
                f" / {s['replacements']} | {s['artifact_rate']} | {fmt(s['auc'])} [{fmt(s.get('auc_ci_low'))}, "
                f"{fmt(s.get('auc_ci_high'))}] | {s['test']} |"
            )
    if "context_length" in results:
        c = results["context_length"]
        lines += ["", f"## Context length ({c['train']} train / {c['test']} test instances, {c['epochs']} epochs, "
                  f"{c['seconds']:.0f} s)", "", "| mode | window | G-Mean | AUC |", "|---|---|---|---|"]  # fmt: skip
        lines += [f"| {t['mode']} | {t['window']} | {fmt(t['gmean'])} | {fmt(t['auc'])} |" for t in c["trials"]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    args = parse_args(argv)
    from hades_ray.cli_common import setup_logging
    from hades_ray.config import load_config
    from hades_ray.ray_runtime import init_ray
    from jobs.context_sweep import print_trials, run_context_sweep, save
    from jobs.decoding_sweep import run_decoding_sweep

    setup_logging()  # the jobs' own progress lines (shards written, detectors saved) between this job's
    began = time.perf_counter()
    output = Path(args.output)
    config = load_config("local", None, overrides(args))
    init_ray(config.ray.address, config.ray.num_cpus)
    results: dict = {}
    if not args.skip_decoding:
        results["decoding"] = part(
            "decoding strategies",
            output / "decoding.json",
            args.force,
            lambda: run_decoding_sweep(overrides(args), output / "decoding", args.docs, args.candidates),
        )
    if not args.skip_context:
        pool = Path(args.pool)
        if not (pool / "pool").is_dir():
            pool = output / "decoding" / "top_k"  # the decoding run's top-k pool stands in for `make demo`'s
            print(f"context length: no pool under {args.pool}; using {pool}", flush=True)
        windows = [int(w) for w in args.windows.split(",") if w.strip()]
        results["context_length"] = part(
            "context length",
            output / "context_length.json",
            args.force,
            lambda: run_context_sweep(config, pool, output / "context", windows, args.max_instances),
        )
        print_trials(results["context_length"])
    results["seconds_total"] = round(time.perf_counter() - began, 1)
    save(results, output / "analyses.json")
    if args.record:
        folder = Path(__file__).resolve().parent / "results"
        save(results | {"command": " ".join(["python", *sys.argv])}, folder / "analyses.json")
        (folder / "analyses.md").write_text(results_markdown(results), encoding="utf-8")
    print(f"analyses written to {output / 'analyses.json'} in {results['seconds_total']:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
