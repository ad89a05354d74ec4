"""What the stored span representations save (issue 35): ``tune``, ``heads``, ``rounds`` and ``tables``
(hades_ray/docs/benchmarks.md says each) with ``detect.reuse_frozen`` on (the frozen backbone's span
vectors made once, hades_ray/detect/reps.py) and off, side by side, with peak memory. Each run writes
one page (``--name``); the published ones: bench_frozen_heads, bench_frozen_rounds and bench_frozen_tune
(tune and tables), each naming its command.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.pipeline import storage  # noqa: E402
from jobs.bench_common import ENWIKI, OFFLINE, adam_epochs, job_command, measured, options, page, spec_table  # noqa: E402
from jobs.bench_common import write_results  # noqa: E402

ARMS = (("reuse", "detect.reuse_frozen=true"), ("no_reuse", "detect.reuse_frozen=false"))
SPACE = """\
detect.pooling: {grid_search: [mean, max]}
detect.mlp_layers: {grid_search: [1, 2]}
detect.mlp_hidden: {grid_search: [32, 128]}
detect.lr: {grid_search: [1.0e-3, 5.0e-3]}
detect.freeze: all
"""


def wiki_instances(n: int, seed: int, source: Path = ENWIKI) -> list:
    """``n`` instances cut from the first ``4 n`` enwiki leads (``swapped_word_instances``)."""
    from hades_ray.io.leads import lead_texts
    from hades_ray.train.learnability import swapped_word_instances

    return swapped_word_instances(lead_texts(source, 4 * n), n, seed)


def _instances(data: Path, args) -> tuple[list, list, Path, Path]:
    """``--train`` and ``--valid`` instances (seeds 1 and 2) and their files under ``data``."""
    from hades_ray.io.hades_format import write_instances

    storage.makedirs(data)
    train, valid = wiki_instances(args.train, 1, Path(args.leads)), wiki_instances(args.valid, 2, Path(args.leads))
    return train, valid, write_instances(train, data / "train.txt"), write_instances(valid, data / "valid.txt")


def _arm(name: str, fn) -> dict:
    """``measured(fn)``, printed as it ends."""
    print(name, result := measured(fn), flush=True)
    return result


def bench_tune(work: Path, args) -> dict:
    from hades_ray.config import load_config
    from hades_ray.train.space import load_space
    from hades_ray.train.tune import tune_detector

    _, _, train, valid = _instances(data := work / "tune_data", args)
    storage.write(work / "space.yaml", SPACE)
    results = {}
    for arm, setting in ARMS:
        storage.delete(data / "_reps")  # the store's making counts in the reuse arm
        overrides = [setting, f"detect.epochs={args.epochs}", f"detect.window={args.window}", "ray.num_cpus=2"]
        config = load_config("local", None, overrides)
        space = load_space(work / "space.yaml", config.to_dict())
        out = work / f"tune_{arm}"
        storage.delete(out)

        def run(config=config, space=space, out=out):
            summary = tune_detector(config, train, valid, out, num_samples=1, space=space)
            epochs = sum((t["epochs"] or 0) + 1 for t in summary["trials"])
            return {"trials": len(summary["trials"]), "trial_epochs": epochs, "best_score": summary["best_score"],
                    "errors": sum(1 for t in summary["trials"] if t["error"])}  # fmt: skip

        results[arm] = _arm(arm, run)
        results[arm]["s_per_trial_epoch"] = round(results[arm]["wall_s"] / max(results[arm]["trial_epochs"], 1), 2)
    results["store_bytes_per_instance"] = _bytes_per_instance(data, args.train)
    results["instances"] = {"train": args.train, "valid": args.valid, "window_tokens": args.window}
    return results


HEAD_KEYS = ("pooling", "mlp_layers", "mlp_hidden", "lr")
HEAD_CONFIGS = [dict(zip(HEAD_KEYS, c)) for c in itertools.product(("mean", "max"), (1, 2), (32, 128), (1e-3, 5e-3))]


def bench_heads(work: Path, args) -> dict:
    """The sweep's work without Ray Tune's per-trial processes: 16 head configurations x ``--epochs`` epochs
    in this process, each epoch's train batches and validation as ``train/loop.py`` runs them: the frozen
    backbone every batch (train mode, as before) against the store made once (``file_store``, in-process
    executor) and the head alone."""
    import torch

    from hades_ray.config import load_config
    from hades_ray.detect.model import SpanHead, build_classifier, load_tokenizer
    from hades_ray.detect.reps import head_scores, instance_vectors
    from hades_ray.detect.spans import encode_spans
    from hades_ray.detect.views import score_spans
    from hades_ray.models.registry import resolve_model
    from hades_ray.pipeline.executor import Executor
    from hades_ray.train.transformer import detector_settings

    train_items, valid_items, train, valid = _instances(data := work / "heads_data", args)
    config = load_config("local", None, [f"detect.window={args.window}", f"detect.epochs={args.epochs}"])
    settings, size = detector_settings(config, "offline"), config.detect.batch_size
    labels = torch.tensor([i.label for i in train_items])
    chunks, window = [(lo, lo + size) for lo in range(0, len(train_items), size)], args.window
    train_rows, valid_rows = (
        [{"words": i.words, "start": i.start, "end": i.end} for i in b] for b in (train_items, valid_items)
    )
    torch.set_num_threads(1)

    def live():
        for head in HEAD_CONFIGS:
            tokenizer = load_tokenizer(resolve_model(settings["backbone"]), settings.get("revision"))
            torch.manual_seed(0)
            _, model = build_classifier(resolve_model(settings["backbone"]), {**settings, **head})
            encoded = lambda lo, hi, t=tokenizer: encode_spans(t, train_rows[lo:hi], "offline", window)  # noqa: E731
            batches = lambda e=encoded: ((e(lo, hi), labels[lo:hi]) for lo, hi in chunks)  # noqa: E731
            validate = lambda m=model, t=tokenizer: score_spans(m, t, valid_rows, "offline", window)  # noqa: E731
            adam_epochs(model, head["lr"], args.epochs, batches, validate)
        return {"backbone_forwards": len(HEAD_CONFIGS) * args.epochs * (len(train_items) + len(valid_items))}

    def stored():
        storage.delete(data / "_reps")  # the store's making counts
        made = 0
        for head in HEAD_CONFIGS:
            trial = {**settings, **head}
            x, s1 = instance_vectors(train_items, train, trial, config.detect, Executor(kind="local"))
            v, s2 = instance_vectors(valid_items, valid, trial, config.detect, Executor(kind="local"))
            made += s1.made_now + s2.made_now
            torch.manual_seed(0)
            model = SpanHead(x.shape[1], head["mlp_layers"], head["mlp_hidden"])
            batches = lambda x=x: ((torch.as_tensor(x[lo:hi]), labels[lo:hi]) for lo, hi in chunks)  # noqa: E731
            adam_epochs(model, head["lr"], args.epochs, batches, lambda m=model, v=v: head_scores(m.head.eval(), v))
        return {"backbone_forwards": len(train_items) + len(valid_items), "store_shards_made": made}

    results = {"reuse": _arm("reuse", stored), "no_reuse": _arm("no_reuse", live)}
    results["store_bytes_per_instance"] = _bytes_per_instance(data, args.train)
    results["setup"] = {"configs": len(HEAD_CONFIGS), "epochs": args.epochs, "train": args.train,
                        "valid": args.valid, "window_tokens": args.window,
                        "backbone": settings["backbone"]}  # fmt: skip
    return results


def _bytes_per_instance(data: Path, n: int) -> float | None:
    """The training file's store (``data/_reps``) in bytes per instance; None where none was made."""
    store = next((data / "_reps").glob("train.txt-*"), None)
    return round(sum(p.stat().st_size for p in (store / "parts").glob("*.parquet")) / max(n, 1), 1) if store else None


def bench_rounds(work: Path, args) -> dict:
    from jobs import demo_loop

    prepared = work / "loop_prepared"
    sizes = f"[{args.round_size},{args.round_size},{args.round_size},{args.round_size}]"
    common = ["--docs", str(args.docs), "--sizes", sizes, "--set", "ray.num_cpus=2"]
    if not (prepared / "round-001" / "round.json").is_file():
        demo_loop.main(["--workdir", str(prepared), "--rounds", "2", *common])
    # Each arm runs in the prepared folder itself, restored from a snapshot: the pool's shards name their
    # paths, so a copy elsewhere would be another pool (its features "made from other input rows").
    snapshot = work / "loop_snapshot"
    if not snapshot.is_dir():
        storage.copy_folder(prepared, snapshot)
    results = {}
    crossval = ["--set", "select.detector_training=crossval", "--set", "select.folds=5"]
    for arm, setting in ARMS:
        storage.copy_folder(snapshot, prepared)
        if arm == "no_reuse":
            storage.delete(prepared / "reps")

        def run(setting=setting):
            demo_loop.main(["--workdir", str(prepared), "--rounds", "4", *common, *crossval, "--set", setting])
            laps = json.loads((prepared / "timings.json").read_text())
            return {f"round_{k}_select_s": laps.get(f"round_{k}_select") for k in (2, 3)}

        results[arm] = _arm(arm, run)
        results[arm]["rounds_2_3_select_s"] = round(sum(results[arm][f"round_{k}_select_s"] or 0 for k in (2, 3)), 1)
    results["setup"] = {"docs": args.docs, "round_size": args.round_size, "folds": 5}
    return results


def bench_tables(work: Path, args) -> dict:
    from hades_ray.config import load_config
    from hades_ray.reproduce.run import reproduce_tables

    dataset = work / "loop_prepared" / "dataset"
    if not (dataset / "train.txt").is_file():
        raise SystemExit(f"{dataset}: run --what rounds first (its demo loop builds the dataset)")
    results = {}
    for arm, setting in ARMS:
        storage.delete(dataset / "_reps")
        out = work / f"tables_{arm}"
        storage.delete(out)
        config = load_config("local", None, [setting, "ray.num_cpus=2", "reproduce.grid=local"])

        def run(config=config, out=out):
            result = reproduce_tables(config, dataset, out)
            return {"cells": len(result["trials"]), "failed": len(result["failed"])}

        results[arm] = _arm(arm, run)
    return results


def ratio(results: dict, field: str) -> float | None:
    before, after = results["no_reuse"].get(field), results["reuse"].get(field)
    return round(before / after, 2) if before and after else None


FIGURES = {"tune": ("wall_s", "s_per_trial_epoch"), "heads": ("wall_s", "backbone_forwards")}
FIGURES |= {"rounds": ("rounds_2_3_select_s", "wall_s"), "tables": ("wall_s",)}
MEMORY = "peak memory MiB (driver + Ray workers)"
FIGURE_TABLE = {"benchmark": lambda f: f[0], "figure": lambda f: f[1] if f[1] != "peak_rss_mib" else MEMORY}
FIGURE_TABLE |= {"reuse_frozen=false (before)": lambda f: f[2]["no_reuse"].get(f[1])}
FIGURE_TABLE |= {"reuse_frozen=true (after)": lambda f: f[2]["reuse"].get(f[1])}
FIGURE_TABLE |= {"before / after": lambda f: f"{ratio(f[2], f[1])}x" if f[1] != "peak_rss_mib" else ""}


def markdown(report: dict) -> str:
    done = [(name, report[name]) for name in FIGURES if report.get(name)]
    rows = [(name, field, r) for name, r in done for field in FIGURES[name]]
    rows += [(name, "peak_rss_mib", r) for name, r in done]
    shown = json.dumps({k: v for k, v in report.items() if k != "command"}, indent=1)
    title = "# Stored span representations: reuse on vs off (jobs/bench_frozen.py)"
    return page(title, f"{report['machine']}.", spec_table(FIGURE_TABLE, rows), f"```json\n{shown}\n```")


def _start_ray(attempts: int = 3) -> None:
    """One cluster for every arm; Ray gives its raylet 30 s to register, which a loaded machine can miss."""
    import ray

    from hades_ray.ray_runtime import init_ray

    for attempt in range(attempts):
        try:
            init_ray(num_cpus=2)
            return
        except Exception as error:  # noqa: BLE001 - retried, then raised
            ray.shutdown()
            if attempt == attempts - 1:
                raise
            print(f"Ray did not start ({error}); retrying", flush=True)


FLAGS = {
    "--what": ("tune,rounds,tables", "comma-separated: tune, heads, rounds, tables"),
    "--work": ("/tmp/hades_bench_frozen", "work folder (the rounds' prep is kept)"),
    "--leads": (str(ENWIKI), "tune: the enwiki leads JSONL (../shared/data)"),
    "--train": (200, "tune: training instances"),
    "--valid": (64, "tune: validation instances"),
    "--epochs": (3, "tune: epochs per trial"),
    "--window": (64, "tune: detect.window (tokens)"),
    "--docs": (40, "rounds: demo corpus documents perturbed"),
    "--round-size": (40, "rounds: batch size of every round"),
    "--name": ("bench_frozen", "results page name under jobs/results/"),
}


def main(argv=None) -> int:
    args = options(__doc__, FLAGS, argv)
    os.environ.update(OFFLINE)
    work = Path(args.work)
    storage.makedirs(work)
    if set(args.what.split(",")) - {"heads"}:
        _start_ray()
    report = {"command": job_command(), "machine": f"{os.cpu_count()} cores, CPU only"}
    for what in args.what.split(","):
        run = {"tune": bench_tune, "heads": bench_heads, "rounds": bench_rounds, "tables": bench_tables}[what]
        report[what] = run(work, args)
        write_results(args.name, report, markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
