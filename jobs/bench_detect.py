"""Detector benchmarks (``make bench``): Ray Train throughput, and a learnability check without human labels.

Examples/s of the MiniLM span classifier on Ray Train (1 and 2 workers) beside a plain PyTorch loop; offline
and online MiniLM detectors, LR and SVM trained on perturbed enwiki leads and evaluated on held-out documents.
Writes jobs/results/bench_detect.{json,md}; what each part does: hades_ray/docs/benchmarks.md.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.markdown import pipe_table
from hades_ray.pipeline import storage
from hades_ray.pipeline.laps import Laps
from hades_ray.train.learnability import learnability_files
from jobs.bench_common import ENWIKI, RESULTS, adam_epochs, kit_or_micro, machine_facts, machine_words, options, page
from jobs.bench_common import write_results


def plain_loop(config, rows: list[dict], threads: int) -> float:
    """Examples/s of the same training steps in one process, without Ray."""
    import torch

    from hades_ray.detect.model import build_classifier
    from hades_ray.detect.spans import encode_spans
    from hades_ray.models.registry import resolve_model
    from hades_ray.train.learning_rate import resolve_lr
    from hades_ray.train.transformer import detector_settings

    torch.set_num_threads(threads)
    torch.manual_seed(config.seed)
    settings = detector_settings(config, "offline")
    tokenizer, model = build_classifier(resolve_model(settings["backbone"]), settings)
    bs, laps, window = config.detect.batch_size, Laps(), settings["window"]
    batches = [rows[lo : lo + bs] for lo in range(0, len(rows), bs)]
    encoded = ((encode_spans(tokenizer, b, "offline", window), torch.tensor([r["label"] for r in b])) for b in batches)
    adam_epochs(model, resolve_lr(config), 1, lambda: encoded)
    return len(rows) / laps.lap()


def throughput(config, n: int) -> dict:
    from hades_ray.detect.synthetic import toy_instances
    from hades_ray.train.transformer import fit_transformer

    train, valid = toy_instances(n, seed=1), toy_instances(16, seed=2)
    rows = [{"words": i.words, "start": i.start, "end": i.end, "label": i.label} for i in train]
    out: dict = {"examples": n, "batch_size": config.detect.batch_size, "window": config.detect.window}
    out |= {"plain_1_thread": plain_loop(config, rows, 1), "plain_2_threads": plain_loop(config, rows, 2)}
    for workers in (1, 2):
        laps = Laps()
        with storage.scratch_folder("bench_detect_") as tmp:
            _, _, last = fit_transformer(config, train, valid, Path(tmp), "offline", workers)
        out[f"ray_{workers}_worker"] = last["examples_per_s"]
        out[f"ray_{workers}_worker_wall_s"] = laps.lap()
    out["ray_overhead_1_worker"] = 1 - out["ray_1_worker"] / out["plain_1_thread"]
    out["speedup_2_vs_1_worker"] = out["ray_2_worker"] / out["ray_1_worker"]
    out["ray_2_workers_vs_plain_2_threads"] = out["ray_2_worker"] / out["plain_2_threads"]
    return out


def learnability(config, pool_dir: Path | None, docs: int, work: Path) -> dict:
    from hades_ray.detect.detector import Detector
    from hades_ray.detect.score_job import evaluate_file
    from hades_ray.train.fit import train_detector

    data = learnability_files(config, work, ENWIKI, docs, {"train": 0.7, "valid": 0.1, "test": 0.2}, pool_dir)
    train, valid, test = data["paths"]
    out = {"instances": data["instances"], "metrics": {}, "seconds": {}}
    for detector, mode in (
        ("transformer", "offline"),
        ("transformer", "online"),
        ("lr", "offline"),
        ("svm", "offline"),
    ):
        name = f"{detector} ({mode})" if detector == "transformer" else detector.upper()
        laps = Laps()
        model = train_detector(config, train, valid, work / f"{detector}_{mode}", detector, mode, 1)
        out["metrics"][name] = evaluate_file(Detector.open(model), test)
        out["seconds"][name] = laps.lap()
    return out


THROUGHPUT = (
    ("plain PyTorch, 1 thread", "plain_1_thread", None),
    ("plain PyTorch, 2 threads", "plain_2_threads", None),
)
THROUGHPUT += (("Ray Train, 1 worker", "ray_1_worker", "ray_1_worker_wall_s"),)
THROUGHPUT += (("Ray Train, 2 workers", "ray_2_worker", "ray_2_worker_wall_s"),)


def _markdown(report: dict) -> str:
    from hades_ray.metrics import markdown_table

    blocks = ["# Detector benchmarks", f"Machine: {machine_words(report)}. {report['note']}"]
    if t := report.get("throughput"):
        rows = [[run, f"{t[rate]:.1f}", f"{t[wall]:.1f}" if wall else ""] for run, rate, wall in THROUGHPUT]
        blocks += [
            "## Training throughput (examples/s, in-loop, MiniLM span classifier)",
            pipe_table(["run", "examples/s", "wall s"], rows),
            f"Ray overhead, 1 worker vs plain 1 thread: {100 * t['ray_overhead_1_worker']:.1f} % (aim < 10 %). "
            f"2 workers vs 1: {t['speedup_2_vs_1_worker']:.2f}x (aim >= 1.6x). "
            f"2 workers vs plain 2 threads: {t['ray_2_workers_vs_plain_2_threads']:.2f}x.",
        ]
    if lr := report.get("learnability"):
        seconds = ", ".join(f"{k} {v:.0f}" for k, v in lr["seconds"].items())
        blocks += ["## Learnability without human labels (held-out documents)", f"Instances: {lr['instances']}"]
        blocks += [markdown_table(lr["metrics"]).rstrip("\n"), "Seconds per detector (train + evaluate): " + seconds]
    return page(*blocks) + "\n"


FLAGS = {
    "--examples": (512, "training examples for the throughput runs"),
    "--docs": (150, "enwiki documents perturbed for learnability"),
    "--pool": (None, "an existing perturbation output's pool/ folder"),
    "--skip": (
        [],
        "leave a part out (repeatable); its figures of the last run are kept",
        {"choices": ("throughput", "learnability"), "action": "append"},
    ),  # fmt: skip
    "--set": ([], "config override KEY=VALUE", {"dest": "overrides", "action": "append"}),
}
DETECT = ["detect.epochs=2", "detect.window=64", "detect.batch_size=16", "detect.feature_window=128"]


def main(argv=None) -> int:
    args = options(__doc__.splitlines()[0], FLAGS, argv)
    from hades_ray.config import load_config
    from hades_ray.ray_runtime import init_ray

    note = "Project models: built."
    if not kit_or_micro():
        note = (
            "Project MLM/GPT-2 not built: micro random-weight models stand in for REPLACE, RANK and the "
            "MLM features (replacements are random words; MLM features are noise)."
        )
    config = load_config(overrides=[*DETECT, *args.overrides])
    init_ray(config.ray.address, config.ray.num_cpus)
    report: dict = {"note": note, "config": config.to_dict()["detect"], "machine": machine_facts()}
    previous = RESULTS / "bench_detect.json"
    if args.skip and previous.is_file():  # a part run alone keeps the other part's last figures
        old = json.loads(previous.read_text())
        report.update({k: old[k] for k in args.skip if k in old})
    if "throughput" not in args.skip:
        report["throughput"] = throughput(config, args.examples)
        print(json.dumps(report["throughput"], indent=2), flush=True)
    if "learnability" not in args.skip:
        with storage.scratch_folder("bench_detect_") as tmp:
            pool = Path(args.pool) if args.pool else None
            report["learnability"] = learnability(config, pool, args.docs, Path(tmp))
    write_results("bench_detect", report, _markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
