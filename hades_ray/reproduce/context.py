"""The context-length analysis (the paper's Fig. 6): span classifiers in offline and online mode,
trained with each context window as one Ray Tune grid (mode x window) on a HaDes-format dataset's judged
labels (train.txt), scored on its test split (valid.txt where the test labels are withheld), with the
model the paper used (its BERT-large detector): the tables grid's BERT row backbone, pinned in
tables_paper.yaml (the kit's stand-in under ``local``), unless ``detect.backbone`` is set. The paper's
windows are 5/10/20/40/80/160 (``reproduce.context_windows``); whether they count words or subword tokens
it does not say, so the unit is ``detect.window_unit`` (hades_ray/detect/spans.py). ``labels="learnability"``
instead trains on a pool's learnability labels (replaced span H, untouched word N): another experiment,
kept as a named option. ``write_outputs`` draws Fig. 6 (context_length.md/.png).

Each trial is the detector's Tune trial (``hades_ray.train.tune.detector_trial``: the detect
package's ``TorchTrainer`` reporting every epoch through ``TuneReportCallback``). The epochs are fixed
and nothing is chosen on the held-out part, so a trial's last report is its test score.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from pathlib import Path

from hades_ray.errors import UserError
from hades_ray.io.hades_format import read_instances, write_instances
from hades_ray.pipeline import storage
from hades_ray.config import recorded_language
from hades_ray.report.labelled import LEARNABILITY
from hades_ray.train.learnability import pool_instances, split_by_doc

log = logging.getLogger(__name__)
EXPERIMENT = "context_length"
METRICS = ("accuracy", "gmean", "bss", "auc", "h_f1", "n_f1", "epoch")
LABELS = ("judged", "learnability")
FIG6_ROW = "BERT"  # the paper ran Fig. 6 with its BERT-large detector: the tables grid's BERT row


def learnability_data(pool: Path, folder: Path, seed: int, max_instances: int) -> tuple[Path, Path, str]:
    """train.txt / test.txt of a pool's learnability instances (70/30 by document) under ``folder``."""
    instances = pool_instances(pool / "pool", seed=seed, language=recorded_language(pool))
    if len(instances) > max_instances:
        instances = random.Random(seed).sample(instances, max_instances)
    train, test = split_by_doc(instances, (0.7, 0.3), seed)
    for name, part in (("train", train), ("test", test)):
        write_instances([i.to_json() for i in part], folder / f"{name}.txt")
    return folder / "train.txt", folder / "test.txt", LEARNABILITY


def label_counts(path: Path) -> Counter:
    """How many instances of a HaDes file carry each label (-1: withheld); empty where it is missing."""
    return Counter(i.label for i in read_instances(path)) if path.is_file() else Counter()


def judged(counts: Counter) -> int:
    return counts[0] + counts[1]


def judged_data(dataset: Path) -> tuple[Path, Path, str]:
    """A HaDes-format dataset's train.txt and its scored split: test.txt, or valid.txt where the test labels
    are withheld (the published Wiki-Hades test.txt); a missing file or split is a one-line error."""
    if not judged(label_counts(dataset / "train.txt")):
        raise UserError(f"{dataset}/train.txt: no judged instances; give a HaDes-format folder (hades-ray dataset "
                        "build, or Wiki-Hades), or --labels learnability with a pool")  # fmt: skip
    scored = next((s for s in ("test", "valid") if judged(label_counts(dataset / f"{s}.txt"))), None)
    if scored is None:
        raise UserError(f"{dataset}: neither test.txt nor valid.txt holds judged instances to score")
    return dataset / "train.txt", dataset / f"{scored}.txt", f"judged labels of {dataset} (scored: {scored}.txt)"


def context_source(labels: str, dataset: str | None, pool: str, output: Path) -> Path:
    """Fig. 6's data: ``dataset`` for judged labels, else the pool whose learnability labels it trains on
    (the decoding study's top-k 10 pool under ``output`` stands in where ``pool`` holds none)."""
    if labels == "judged":
        if not dataset:
            raise UserError("Fig. 6 trains on judged labels: give --dataset (a HaDes-format folder, e.g. "
                            "out/demo-loop/dataset), or --labels learnability with --pool")  # fmt: skip
        return Path(dataset)
    if not (Path(pool) / "pool").is_dir():
        stand_in = output / "decoding" / "top-k_10"
        log.info("context length: no pool under %s; using %s", pool, stand_in)
        return stand_in
    return Path(pool)


def sizes(train: Path, test: Path) -> dict[str, int]:
    """Judged instances of the two files (test: per label, for the AUC's interval)."""
    tested = label_counts(test)
    return {"train": judged(label_counts(train)), "test": judged(tested), "test_h": tested[1], "test_n": tested[0]}


def progress_callback():
    """One log line per trial epoch (Tune's own table is off: it is a screenful per update on a terminal)."""
    from ray.tune import Callback

    class EpochLines(Callback):
        def on_trial_result(self, iteration, trials, trial, result, **info):
            mode, window = trial.config["detect.mode"], trial.config["detect.window"]
            gmean, auc = result.get("gmean") or float("nan"), result.get("auc") or float("nan")
            log.info("context length: %s window %s: epoch %s G-Mean %.3f AUC %.3f", mode, window,
                     result.get("epoch"), gmean, auc)  # fmt: skip

        def on_trial_error(self, iteration, trials, trial, **info):
            log.warning("context length: trial %s failed (its error is in context_length.json)", trial.config)

    return EpochLines()


def fig6_backbone(config) -> tuple[str, str]:
    """(backbone, where it comes from) of Fig. 6's span classifiers: ``detect.backbone`` when the config
    sets one (a preset, ``--config`` or ``--set``), else the tables grid's BERT row, whose pinned revision
    it records in ``models.revisions``."""
    from hades_ray.reproduce.grid import pin_grid, read_grid

    if config.detect.backbone:
        return config.detect.backbone, "detect.backbone"
    grid = read_grid(config)
    row = next((r for r in grid.rows if r.name == FIG6_ROW), None)
    if row is None or not row.backbone:
        return config.models.encoder, f"models.encoder ({grid.path.name} has no {FIG6_ROW} row)"
    pin_grid(config, grid)
    return row.backbone, f"the {FIG6_ROW} row of {grid.path.name}"


def run_context_sweep(config, source: Path, folder: Path, labels: str = "judged") -> dict:
    """Grid over ``detect.mode`` x ``reproduce.context_windows`` (counted in ``detect.window_unit``) on
    ``source``: a HaDes-format dataset (``labels="judged"``) or a perturbation pool (``"learnability"``,
    at most ``reproduce.context_instances``); returns the results context_length.json holds."""
    from ray import tune

    from hades_ray.ray_runtime import init_ray
    from hades_ray.train.tune import concurrent_trials, detector_trial

    folder = folder.resolve()
    windows = list(config.reproduce.context_windows)
    backbone, backbone_from = fig6_backbone(config)
    config.detect.backbone = backbone
    if labels == "judged":
        train, test, described = judged_data(Path(source))
    else:
        limit = config.reproduce.context_instances
        train, test, described = learnability_data(Path(source), folder, config.seed, limit)
    log.info("context length: %d trials (offline and online x windows %s, %s) on %s", 2 * len(windows),
             windows, config.detect.window_unit, described)  # fmt: skip
    init_ray(config.ray.address, config.ray.num_cpus)
    storage.delete(folder / EXPERIMENT)  # a fresh grid: the data above was just rewritten
    trainable = tune.with_resources(
        tune.with_parameters(
            detector_trial,
            base=config.to_dict(),
            train_path=str(train),
            valid_path=str(test),
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
        "labels": described,
        "label_kind": labels,
        "source": str(source),
        "preset": config.preset,
        "backbone": backbone,
        "backbone_from": backbone_from,
        "revision": config.models.revisions.get(backbone, ""),
        "epochs": config.detect.epochs,
        "windows": windows,
        "window_unit": config.detect.window_unit,
        **sizes(train, test),
        "trials": trials,
    }


def log_trials(results: dict) -> None:
    for t in results["trials"]:
        log.info("context length: %-7s window %4s: G-Mean %s, AUC %s", t["mode"], t["window"], t["gmean"], t["auc"])


def context_markdown(results: dict) -> list[str]:
    """The Fig. 6 table: one row per window, offline and online side by side."""
    from hades_ray.markdown import pipe_table
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
    storage.write_json_atomic(folder / f"{stem}.json", results)
    storage.write(folder / f"{stem}.md", "\n".join(context_markdown(results)) + "\n")
    storage.write(folder / f"{stem}.png", context_figure(trials, window_label(results)))
    return [folder / f"{stem}.{ext}" for ext in ("json", "md", "png")]
