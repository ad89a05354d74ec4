"""The context-length analysis (the paper's Fig. 6): span classifiers in offline and online mode,
trained with each context window as one Ray Tune grid (mode x window), scored on held-out documents.
The paper's windows are 5/10/20/40/80/160 words around the target (``detect.window_unit=words``,
hades_ray/detect/spans.py); ``write_outputs`` draws them as its Fig. 6 (context_length.md/.png).

Each trial is the detector's Tune trial (``hades_ray.train.tune.detector_trial``: the detect
package's ``TorchTrainer`` reporting every epoch through ``TuneReportCallback``). The epochs are fixed
and nothing is chosen on the held-out part, so a trial's last report is its test score.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from hades_ray.train.learnability import pool_instances, split_by_doc
from hades_ray.io.hades_format import write_instances
from hades_ray.pipeline import storage
from hades_ray.report.labelled import LEARNABILITY

EXPERIMENT = "context_length"
PAPER_WINDOWS = (5, 10, 20, 40, 80, 160)  # words around the target (the paper's Fig. 6)
METRICS = ("accuracy", "gmean", "bss", "auc", "h_f1", "n_f1", "epoch")


def sweep_data(pool: Path, folder: Path, seed: int, max_instances: int) -> dict[str, int]:
    """train.txt / test.txt of learnability instances (70/30 by document) under ``folder``."""
    instances = pool_instances(pool / "pool", seed=seed)
    if len(instances) > max_instances:
        instances = random.Random(seed).sample(instances, max_instances)
    train, test = split_by_doc(instances, (0.7, 0.3), seed)
    for name, part in (("train", train), ("test", test)):
        write_instances([i.to_json() for i in part], folder / f"{name}.txt")
    return {"train": len(train), "test": len(test), "test_h": sum(i.label == 1 for i in test),
            "test_n": sum(i.label == 0 for i in test)}  # fmt: skip


def progress_callback():
    """One line per trial epoch (Tune's own table is off: it is a screenful per update on a terminal)."""
    from ray.tune import Callback

    class EpochLines(Callback):
        def on_trial_result(self, iteration, trials, trial, result, **info):
            mode, window = trial.config["detect.mode"], trial.config["detect.window"]
            gmean, auc = result.get("gmean") or float("nan"), result.get("auc") or float("nan")
            print(f"  {mode} window {window}: epoch {result.get('epoch')} G-Mean {gmean:.3f} AUC {auc:.3f}", flush=True)

        def on_trial_error(self, iteration, trials, trial, **info):
            print(f"  trial {trial.config} failed (its error is in analyses.json)", flush=True)

    return EpochLines()


def run_context_sweep(config, pool: Path, folder: Path, windows: list[int], max_instances: int) -> dict:
    """Grid over ``detect.mode`` x ``detect.window`` (counted in ``config.detect.window_unit``); returns
    the results analyses.json holds."""
    from ray import tune

    from hades_ray.train.tune import concurrent_trials, detector_trial
    from hades_ray.ray_runtime import init_ray

    folder = folder.resolve()
    sizes = sweep_data(pool, folder, config.seed, max_instances)
    init_ray(config.ray.address, config.ray.num_cpus)
    shutil.rmtree(folder / EXPERIMENT, ignore_errors=True)  # a fresh grid: the data above was just rewritten
    trainable = tune.with_resources(
        tune.with_parameters(
            detector_trial,
            base=config.to_dict(),
            train_path=str(folder / "train.txt"),
            valid_path=str(folder / "test.txt"),
            storage=str(folder / "train_runs"),
        ),
        {"cpu": 0, "memory": 1},
    )
    tuner = tune.Tuner(
        trainable,
        param_space={
            "detect.mode": tune.grid_search(["offline", "online"]),
            "detect.window": tune.grid_search(windows),
        },
        tune_config=tune.TuneConfig(max_concurrent_trials=concurrent_trials(config)),
        run_config=tune.RunConfig(
            name=EXPERIMENT, storage_path=str(folder), verbose=0, callbacks=[progress_callback()]
        ),
    )
    trials = []
    for result in tuner.fit():
        metrics = result.metrics or {}
        trials.append(
            {
                "mode": result.config["detect.mode"],
                "window": result.config["detect.window"],
                **{k: metrics.get(k) for k in METRICS},
                "error": str(result.error) if result.error else None,
            }
        )
    trials.sort(key=lambda t: (t["mode"], t["window"]))
    return {
        "labels": LEARNABILITY,
        "pool": str(pool),
        "backbone": config.detect.backbone or config.models.encoder,
        "epochs": config.detect.epochs,
        "windows": windows,
        "window_unit": config.detect.window_unit,
        **sizes,
        "trials": trials,
    }


def print_trials(results: dict) -> None:
    for t in results["trials"]:
        print(f"  {t['mode']:<7} window {t['window']:>4}: G-Mean {t['gmean']}, AUC {t['auc']}", flush=True)


def context_markdown(results: dict) -> list[str]:
    """The Fig. 6 table: one row per window, offline and online side by side."""
    from hades_ray.report.markdown import pipe_table
    from hades_ray.report.model import fmt
    from hades_ray.report.sweeps import window_label

    by = {(t["mode"], t["window"]): t for t in results["trials"]}
    columns = [f"{mode} {n}" for mode in ("offline", "online") for n in ("accuracy", "G-Mean", "BSS", "AUC")]
    rows = [
        [window, *(fmt(by.get((mode, window), {}).get(k)) for mode in ("offline", "online") for k in METRICS[:4])]
        for window in sorted({t["window"] for t in results["trials"]})
    ]
    return pipe_table([f"window ({window_label(results)})", *columns], rows)


def write_outputs(results: dict, folder: Path, stem: str = EXPERIMENT) -> list[Path]:
    """``stem``.json, .md (the table) and .png (the paper's Fig. 6) under ``folder``."""
    from hades_ray.report.sweeps import context_figure, window_label

    trials = [t for t in results["trials"] if not t.get("error")]
    save(results, folder / f"{stem}.json")
    storage.write(folder / f"{stem}.md", "\n".join(context_markdown(results)) + "\n")
    storage.write(folder / f"{stem}.png", context_figure(trials, window_label(results)))
    return [folder / f"{stem}.{ext}" for ext in ("json", "md", "png")]


def save(results: dict, path: Path) -> None:
    storage.write(path, json.dumps(results, indent=2) + "\n")
