"""The grid as ONE Ray Tune experiment: a grid search over the cells, each trial a Ray Train fit (or
LR/SVM), as many at once as the cluster's CPUs allow (``detect.tune.concurrent_trials``).

Resume is explicit. A new ``--output`` starts a new experiment; an existing one is refused unless
``--resume``, which restores it with ``Tuner.restore`` (finished trials are kept, unfinished and failed
ones run again), and only when this tool created and recorded it (``detect.tune_record``: resuming
unpickles its files) with the same config and grid (``grid.json``).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from hades_ray.config import HadesConfig, save_config
from hades_ray.train.tune_record import ResumeRefused, check_resumable, record_sweep
from hades_ray.errors import UserError
from hades_ray.pipeline.storage import write_json_atomic
from hades_ray.reproduce.grid import Cell, Grid

log = logging.getLogger(__name__)
EXPERIMENT = "tables_grid"
PLAN = "grid.json"


def plan_record(config: HadesConfig, grid: Grid, cells: list[Cell], dataset: Path) -> dict:
    """What a resumed run must match: the resolved config, the grid's rows and cells, the dataset."""
    return {
        "config": config.to_dict(),
        "grid_file": str(grid.path),
        "rows": [vars(r) | {"modes": list(r.modes), "overrides": [list(o) for o in r.overrides]} for r in grid.rows],
        "cells": [{"row": c.row, "mode": c.mode} for c in cells],
        "dataset": str(dataset.resolve()),
    }


def _check_output(output: Path, record: dict, resume: bool) -> None:
    experiment = output / EXPERIMENT
    if not resume:
        if experiment.exists():
            raise FileExistsError(
                f"{experiment} already holds a grid: pass --resume to continue it, or choose a new --output"
            )
        return
    check_resumable(output, experiment)
    saved = json.loads((output / PLAN).read_text(encoding="utf-8")) if (output / PLAN).is_file() else None
    if saved != json.loads(json.dumps(record)):
        changed = [k for k in record if (saved or {}).get(k) != json.loads(json.dumps(record[k]))]
        raise ResumeRefused(
            f"{output / PLAN}: the grid there was started with another {', '.join(changed) or 'plan'}; "
            "--resume continues it only with the same config, grid and dataset"
        )


def run_experiment(
    config: HadesConfig, grid: Grid, cells: list[Cell], dataset: Path, output: Path, resume: bool
) -> list[dict]:
    """Run (or resume) the experiment; returns one entry per trial: its cell and error, if any."""
    from ray import tune

    from hades_ray.train.tune import concurrent_trials
    from hades_ray.ray_runtime import init_ray
    from hades_ray.reproduce.trial import fault_setting, table_trial

    output = output.resolve()
    record = plan_record(config, grid, cells, dataset)
    _check_output(output, record, resume)
    init_ray(config.ray.address, config.ray.num_cpus)
    trainable = tune.with_resources(
        tune.with_parameters(
            table_trial,
            base=config.to_dict(),
            grid=grid,
            dataset=str(dataset.resolve()),
            output=str(output),
            fault=fault_setting(),
        ),
        {"cpu": 0, "memory": 1},  # the trial's driver; its Train workers take detect.worker_cpus each
    )
    experiment = output / EXPERIMENT
    if resume:
        log.info("resuming the grid in %s", experiment)
        tuner = tune.Tuner.restore(str(experiment), trainable=trainable, resume_unfinished=True, resume_errored=True)
    else:
        save_config(config, output)
        write_json_atomic(output / PLAN, record)
        tuner = tune.Tuner(
            trainable,
            param_space={"cell": tune.grid_search(record["cells"])},
            tune_config=tune.TuneConfig(
                max_concurrent_trials=config.reproduce.max_concurrent_trials or concurrent_trials(config)
            ),
            run_config=tune.RunConfig(name=EXPERIMENT, storage_path=str(output)),
        )
        record_sweep(output, experiment)  # the Tuner has just written tuner.pkl
    results = tuner.fit()
    return [{"cell": r.config["cell"], "error": str(r.error).splitlines()[0] if r.error else None} for r in results]


def failed_cells(trials: list[dict]) -> list[str]:
    return [Cell(**t["cell"]).key for t in trials if t["error"]]


def require_dataset(dataset: Path) -> Path:
    missing = [s for s in ("train", "valid", "test") if not (dataset / f"{s}.txt").is_file()]
    if missing:
        raise UserError(
            f"--dataset {dataset}: no {missing[0]}.txt; give a HaDes-format folder (train/valid/test.txt: the "
            "published Wiki-Hades files, or `hades-ray dataset build` output)"
        )
    return dataset
