"""The paper's Fig. 6 and decoding study under a preset (default: local, the offline kit): context
windows of 5/10/20/40/80/160 (words by default; the paper does not give the unit), offline and online,
as one Ray Tune grid on a HaDes-format dataset's judged labels (jobs/context_sweep.py), and greedy, top-k
5/10/50 and top-p 0.95/0.9/0.8 REPLACE on the same 30 texts (jobs/decoding_sweep.py), both experiments
that train and perturb, so they live here and hades_ray/report/ only reads their results.
Writes OUTPUT/analyses.json (which `hades-ray report --analyses` reads), OUTPUT/context_length.{json,md,png}
(Fig. 6), OUTPUT/decoding.json and the decoding study's judging round (OUTPUT/decoding/judging).

    python jobs/analyses.py --dataset out/demo-loop/dataset --output out/analyses [--preset paper] \
        [--set ray.num_cpus=2]

Fig. 6 trains the backbone of the tables grid's BERT row (``hades_ray/presets/tables_<preset>.yaml``: the
paper's bert-large-uncased, pinned, under ``--preset paper``; the kit's MLM under ``local``), as the paper
ran Fig. 6 with its BERT-large detector, unless ``detect.backbone`` is set. ``--set`` values come last and
win over this job's own flags.

``--labels learnability`` trains Fig. 6 on a pool's learnability labels instead (replaced spans H,
untouched content words N; no judgments), another experiment, and the report says so. A part whose
results exist is reused unless --force. The decoding runs rank the config's candidates per text (20);
--candidates, --epochs and --max-instances keep both parts small on 2 shared cores.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.cli_common import add_config_args  # noqa: E402
from jobs.bench_common import OFFLINE, RESULTS, Laps, write_results
from jobs.context_sweep import LABELS

for key, value in OFFLINE.items():
    os.environ.setdefault(key, value)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--dataset", default=None, help="HaDes-format folder whose judged labels Fig. 6 trains and scores on"
    )
    parser.add_argument(
        "--labels",
        choices=LABELS,
        default="judged",
        help="Fig. 6's labels: judged (--dataset's) or learnability (--pool's replaced spans H, untouched words N)",
    )
    parser.add_argument("--pool", default="out/demo", help="perturbation output for --labels learnability (make demo)")
    parser.add_argument("--output", default="out/analyses", help="folder for analyses.json and the runs behind it")
    parser.add_argument("--windows", default="5,10,20,40,80,160", help="context windows, comma-separated (the paper's)")
    parser.add_argument(
        "--window-unit",
        default="words",
        choices=("words", "tokens"),
        help="what a window counts: words around the target or subword tokens (the paper does not say which)",
    )
    parser.add_argument("--epochs", type=int, default=2, help="training epochs of each context-sweep trial")
    parser.add_argument("--max-instances", type=int, default=400, help="learnability instances for the context sweep")
    parser.add_argument("--texts", type=int, default=30, help="demo texts perturbed by every decoding setting")
    parser.add_argument(
        "--candidates", type=int, default=0, help="candidates per text in the decoding runs (0: the config's, 20)"
    )
    parser.add_argument("--feature-window", type=int, default=128, help="MLM tokens around a span (LR features)")
    parser.add_argument("--skip-context", action="store_true", help="leave the context-length sweep out")
    parser.add_argument("--skip-decoding", action="store_true", help="leave the decoding-strategy sweep out")
    parser.add_argument("--force", action="store_true", help="rerun parts whose results exist")
    parser.add_argument("--record", action="store_true", help="also copy analyses.json to jobs/results/")
    add_config_args(parser)  # --preset, --config, --set, --seed
    return parser.parse_args(argv)


def overrides(args) -> list[str]:
    """The job's flags as config values, then the user's ``--set`` values, which win over them (Ray's CPUs
    are the config's: ``--set ray.num_cpus=2`` on a shared machine)."""
    return [
        *([f"seed={args.seed}"] if args.seed is not None else []),
        f"detect.epochs={args.epochs}",
        f"detect.feature_window={args.feature_window}",
        f"detect.window_unit={args.window_unit}",
        *args.overrides,
    ]


def context_source(args, output: Path) -> Path:
    """Fig. 6's data: --dataset for judged labels, else the pool whose learnability labels it trains on."""
    from hades_ray.errors import UserError

    if args.labels == "judged":
        if not args.dataset:
            raise UserError("Fig. 6 trains on judged labels: give --dataset (a HaDes-format folder, e.g. "
                            "out/demo-loop/dataset), or --labels learnability with --pool")  # fmt: skip
        return Path(args.dataset)
    pool = Path(args.pool)
    if not (pool / "pool").is_dir():
        pool = output / "decoding" / "top-k_10"  # the study's top-k 10 pool stands in for make demo's
        print(f"context length: no pool under {args.pool}; using {pool}", flush=True)
    return pool


def part(name: str, path: Path, force: bool, make) -> dict:
    """A part's results: reused from ``path`` when there, else made, timed and saved."""
    from jobs.context_sweep import save

    if path.is_file() and not force:
        print(f"{name}: reusing {path} (--force reruns it)", flush=True)
        return json.loads(path.read_text(encoding="utf-8"))
    print(f"{name}: running", flush=True)
    laps = Laps()
    results = make()
    results["seconds"] = round(laps.lap(), 1)
    save(results, path)
    print(f"{name}: done in {results['seconds']:.0f} s -> {path}", flush=True)
    return results


def results_markdown(results: dict) -> str:
    """jobs/results/analyses.md: the measured figures, as the report shows them."""
    from jobs.context_sweep import context_markdown

    lines = ["# Analyses (jobs/analyses.py)", ""]  # write_results stamps the commit and the command
    parts = {k: results[k]["seconds"] for k in ("decoding", "context_length") if k in results}
    lines.append(
        "Wall seconds of the run that made each part (a reused part keeps its own): "
        + ", ".join(f"{k} {v:.0f}" for k, v in parts.items())
        + "; 2 cores."
        + (f" Context-length labels: {results['context_length']['labels']}." if "context_length" in results else "")
    )
    if "decoding" in results:
        lines += ["", *decoding_markdown(results["decoding"])]
    if "context_length" in results:
        c = results["context_length"]
        lines += ["", f"## Context length, the paper's Fig. 6 ({c['train']} train / {c['test']} test instances, "
                  f"{c['epochs']} epochs, {len(c['trials'])} trials in one Ray Tune grid, {c['seconds']:.0f} s)", "",
                  f"Backbone: `{c['backbone']}` ({c.get('backbone_from', 'the config')}).", "",
                  *context_markdown(c), "", "![Fig. 6](context_length.png)"]  # fmt: skip
    return "\n".join(lines) + "\n"


def record_figures(results: dict, folder: Path) -> None:
    """jobs/results/context_length.png (Fig. 6) and decoding.png beside analyses.md."""
    from hades_ray.pipeline import storage
    from hades_ray.report.sweeps import context_figure, decoding_figure, window_label

    if "context_length" in results:
        c = results["context_length"]
        trials = [t for t in c["trials"] if not t.get("error")]
        storage.write(folder / "context_length.png", context_figure(trials, window_label(c)))
    if "decoding" in results:
        storage.write(folder / "decoding.png", decoding_figure(results["decoding"]["strategies"]))


def decoding_markdown(d: dict) -> list[str]:
    """The decoding study's table (jobs/results/analyses.md)."""
    from hades_ray.report.markdown import pipe_table
    from hades_ray.report.model import fmt

    reused = ", pools of an earlier run reused" if any(s.get("pool_reused") for s in d["strategies"]) else ""
    columns = ["setting", "kept ppl (median)", "distinct / replacements", "artifact rate", "incoherent", "share"]
    columns += ["share > ln 10", "share > ln 1000", "median jump (nats)", "texts with one"]
    rows = [
        [s["label"], f"{s['kept_ppl_median']:.1f}", f"{s['distinct_replacements']} / {s['replacements']}"]
        + [fmt(s["artifact_rate"]), s["incoherent"], fmt(s["incoherence_rate"]), fmt(s["incoherence_rate_ln10"])]
        + [fmt(s["incoherence_rate_ln1000"]), fmt(s["surprisal_jump_median"]), s["texts_with_incoherent"]]
        for s in d["strategies"]
    ]
    lines = [f"## Decoding study ({d['documents']} texts, the same for every setting, {d['candidates']} candidates, "
             f"seed {d['seed']}, {d['seconds']:.0f} s{reused})", "",
             f"Incoherent: {d['proxy']['definition']} (LM `{d['proxy']['lm']}`; jobs/incoherence.py says why).", "",
             *pipe_table(columns, rows)]  # fmt: skip
    j = d["judging"]
    return lines + ["", f"For judges: {j['items']} items ({j['export']}, `{Path(j['files'][0]).name}`), "
                    f"imported with `{j['import']}`; `key.jsonl` maps items to settings."]  # fmt: skip


def main(argv=None) -> int:
    args = parse_args(argv)
    from hades_ray.cli_common import setup_logging
    from hades_ray.config import load_config
    from hades_ray.ray_runtime import init_ray
    from jobs.context_sweep import print_trials, run_context_sweep, save, write_outputs
    from jobs.decoding_sweep import run_decoding_sweep

    setup_logging()  # the jobs' own progress lines (shards written, detectors saved) between this job's
    laps = Laps()
    output = Path(args.output)
    config = load_config(args.preset, args.config_file, overrides(args))
    source = None if args.skip_context else context_source(args, output)  # before any work: a bad one stops here
    init_ray(config.ray.address, config.ray.num_cpus)
    results: dict = {}
    if not args.skip_decoding:
        results["decoding"] = part(
            "decoding strategies",
            output / "decoding.json",
            args.force,
            lambda: run_decoding_sweep(config, output / "decoding", args.texts, args.candidates),
        )
    if not args.skip_context:
        windows = [int(w) for w in args.windows.split(",") if w.strip()]
        results["context_length"] = part(
            "context length",
            output / "context_length.json",
            args.force,
            lambda: run_context_sweep(config, source, output / "context", windows, args.max_instances, args.labels),
        )
        print_trials(results["context_length"])
        write_outputs(results["context_length"], output)
    results["seconds_total"] = round(laps.total(), 1)
    save(results, output / "analyses.json")
    if args.record:
        write_results("analyses", results | {"command": " ".join(["python", *sys.argv])}, results_markdown(results))
        record_figures(results, RESULTS)
    print(f"analyses written to {output / 'analyses.json'} in {results['seconds_total']:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    from hades_ray.errors import UserError

    try:
        sys.exit(main())
    except UserError as error:  # what to give instead, in one line
        sys.exit(f"jobs/analyses.py: {error}")
