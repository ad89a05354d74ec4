"""The grid as ONE Ray Tune experiment: a grid search over the cells, each trial a Ray Train fit (or
LR/SVM), as many at once as the cluster's CPUs allow (``detect.tune.concurrent_trials``).

Every run is a fresh grid (never ``Tuner.restore``, which would unpickle the folder's files) whose trials
are steps (``reproduce/trial.py``), so a rerun of the same command continues the grid: a finished cell
with the same config and dataset is kept, a failed or unfinished one runs again, and one finished with
another config or dataset stops the grid before it starts, naming ``--force`` (every cell again).
"""

from __future__ import annotations

from pathlib import Path

from hades_ray.config import HadesConfig, save_config
from hades_ray.errors import UserError
from hades_ray.pipeline.steps import must_run
from hades_ray.pipeline import storage
from hades_ray.pipeline.storage import write_json_atomic
from hades_ray.reproduce.grid import Cell, Grid

EXPERIMENT = "tables_grid"
PLAN = "grid.json"


def plan_record(config: HadesConfig, grid: Grid, cells: list[Cell], dataset: Path) -> dict:
    """The plan ``grid.json`` records: the resolved config, the grid's rows and cells, the dataset."""
    return {
        "config": config.to_dict(),
        "grid_file": str(grid.path),
        "rows": [vars(r) | {"modes": list(r.modes), "overrides": [list(o) for o in r.overrides]} for r in grid.rows],
        "cells": [{"row": c.row, "mode": c.mode} for c in cells],
        "dataset": str(dataset.resolve()),
    }


def run_experiment(
    config: HadesConfig, grid: Grid, cells: list[Cell], dataset: Path, output: Path, force: bool = False
) -> list[dict]:
    """Run the experiment, keeping its finished cells (``force``: every cell again); returns one entry per
    trial: its cell and error, if any."""
    from ray import tune

    from hades_ray.train.tune import concurrent_trials
    from hades_ray.ray_runtime import init_ray
    from hades_ray.reproduce.trial import cell_step, fault_setting, table_trial

    output = output.resolve()
    experiment = output / EXPERIMENT
    for cell in cells:  # a cell finished with another config or dataset stops the grid before any work
        must_run(cell_step(config.to_dict(), grid, cell, str(dataset.resolve()), str(output)), force)
    record = plan_record(config, grid, cells, dataset)
    init_ray(config.ray.address, config.ray.num_cpus)
    trainable = tune.with_resources(
        tune.with_parameters(
            table_trial,
            base=config.to_dict(),
            grid=grid,
            dataset=str(dataset.resolve()),
            output=str(output),
            fault=fault_setting(),
            force=force,
        ),
        {"cpu": 0, "memory": 1},  # the trial's driver; its Train workers take detect.worker_cpus each
    )
    storage.delete(experiment)  # Tune's own state: the cells' steps hold what is kept
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
