"""Ray Tune sweep of the detector's configuration (Ray Train inside Tune); hades_ray/select/tune_selection.py
sweeps a round's selection cuts.

Train V2 cannot be passed to ``Tuner`` (hades_ray/docs/ray.md): each trial is a function that runs the detect
package's own ``TorchTrainer`` setup with ``TuneReportCallback``, so every epoch's validation report
reaches Tune and ASHA can stop weak trials early. The trial driver takes no CPU
(``{"cpu": 0, "memory": 1}``); its Train workers take ``detect.worker_cpus`` each. A trial of a frozen
backbone with one worker and no GPU trains the head alone on the view's stored vectors in the trial's own
process (``transformer.head_in_process``), reporting each epoch with ``tune.report``: it takes the
worker's CPUs itself, and no Train worker group starts for a few milliseconds of head training.
The sweep is a step (``hades_ray/pipeline/steps.py``): a finished one is returned as recorded, one
finished with other settings or data stops the command, ``force`` starts it again. An unfinished one is
continued by a rerun with the same settings and data, after ``tune_record.check_resumable`` (resuming
unpickles the sweep's files, and its record names what it was made with); one made otherwise stops the command.
"""

from __future__ import annotations

import functools
import json
import logging
from pathlib import Path

from hades_ray.config import save_config
from hades_ray.detect.data import LoadReport, load_labelled
from hades_ray.train.space import apply_trial, space_values
from hades_ray.pipeline.steps import Step, digest_of, files_identity, run_step
from hades_ray.train.tune_record import check_resumable, record_sweep
from hades_ray.pipeline.storage import delete, write_json_atomic

log = logging.getLogger(__name__)
EXPERIMENT = "tune_detector"


def default_space():
    """The paper's knobs (§5): pooling, the MLP head's depth and hidden size (0: h/2), freezing the backbone
    or not (all but its last layer: our reading of a middle option); and ours, which the paper fixes or does
    not name: the learning rate and the window."""
    from ray import tune

    return {
        "detect.pooling": tune.choice(["mean", "max"]),
        "detect.mlp_layers": tune.choice([1, 2, 3]),
        "detect.mlp_hidden": tune.choice([0, 128, 512]),
        "detect.freeze": tune.choice(["all", "last_layer", "none"]),
        "detect.lr": tune.loguniform(1e-4, 1e-2),  # holds the paper's 1e-3 and 5e-3
        "detect.window": tune.choice([64, 160]),
    }


def detector_trial(trial: dict, base: dict, train_path: str, valid_path: str, storage: str) -> None:
    """One Tune trial: a Ray Train fit of the span classifier, each epoch reported to Tune."""
    from ray import tune
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer
    from ray.tune.integration.ray_train import TuneReportCallback

    from hades_ray.train.fit import stored_vectors
    from hades_ray.train.loop import fit_head, train_loop_per_worker
    from hades_ray.train.transformer import head_in_process, loop_config, train_dataset

    config = apply_trial(base, trial)
    d = config.detect
    report = LoadReport()
    train, valid = load_labelled(train_path, d.skip_bad, report), load_labelled(valid_path, d.skip_bad, report)
    # A frozen backbone's vectors come from the view's store (made by the sweep's driver): no forward here.
    reps = stored_vectors(config, d.mode, {"train": (train, train_path), "valid": (valid, valid_path)})
    if head_in_process(reps, d.workers, d.use_gpu):
        fit_head(loop_config(config, train, valid, d.mode, reps), reps[0], [i.label for i in train], tune.report)
        return
    trainer = TorchTrainer(
        train_loop_per_worker,
        train_loop_config=loop_config(config, train, valid, d.mode, reps),
        scaling_config=ScalingConfig(
            num_workers=d.workers, use_gpu=d.use_gpu, resources_per_worker={"CPU": d.worker_cpus}
        ),
        run_config=RunConfig(
            name=f"train-{tune.get_context().get_trial_id()}",
            storage_path=storage,
            failure_config=FailureConfig(max_failures=d.max_failures),
            callbacks=[TuneReportCallback()],
        ),
        datasets={"train": train_dataset(train, reps)},
    )
    result = trainer.fit()
    if result.error:
        raise result.error


def trains_in_trial(config) -> bool:
    """Whether a trial of ``config`` trains the head itself, in its own process (a frozen backbone's stored
    vectors, one worker, no GPU: ``detector_trial``), rather than through a Ray Train worker group."""
    from hades_ray.detect.reps import reuses_store
    from hades_ray.train.transformer import detector_settings

    d = config.detect
    return d.workers == 1 and not d.use_gpu and reuses_store(detector_settings(config, d.mode), d)


def trial_resources(base: dict, trial: dict):
    """A trial process's own resources: a Train worker's CPUs where it trains the head itself, else none
    (its Train workers hold them)."""
    from ray.tune.execution.placement_groups import resource_dict_to_pg_factory

    config = apply_trial(base, trial)
    itself = trains_in_trial(config)
    return resource_dict_to_pg_factory({"cpu": config.detect.worker_cpus if itself else 0, "memory": 1})


# What decides whether a trial trains its head in its own process (``trains_in_trial``).
ROUTE_KEYS = ("detect.workers", "detect.use_gpu", "detect.reuse_frozen", "detect.freeze", "detect.mode")


def heads_only(config, space: dict) -> bool:
    """Whether every trial ``space`` can draw trains its head in its own process. Such a sweep reuses its
    trial processes (Tune's ``reuse_actors``): a head's epochs take milliseconds and a new trial process
    seconds of imports (16 heads x 3 epochs: 77.9 s -> 30.2 s, the same trials). A sweep with Ray Train
    trials starts a process per trial: Tune stops a trial's function mid-fit, and a reused process would
    keep its Train run going."""
    import itertools

    base = config.to_dict()
    values = [space_values(space, k, _current(base, k)) for k in ROUTE_KEYS]
    if any(v is None for v in values):
        return False
    return all(trains_in_trial(apply_trial(base, dict(zip(ROUTE_KEYS, c)))) for c in itertools.product(*values))


def concurrent_trials(config) -> int:
    """Trials at once so that Train workers leave one CPU free for Ray Data's read tasks (hades_ray/docs/ray.md)."""
    from hades_ray.ray_runtime import cluster_cpus

    per_trial = config.detect.workers * config.detect.worker_cpus
    return max(1, int((cluster_cpus() - 1) // per_trial))


def tune_detector(
    config,
    train_path,
    valid_path,
    output,
    num_samples: int = 4,
    space: dict | None = None,
    force: bool = False,
) -> dict:
    """Sweep the detector in ``output`` (continuing the unfinished sweep of the same settings and data
    there; ``force``: a new one); writes best.json. The sweep is a step: a finished one is returned as recorded."""
    output = Path(output).resolve()
    space = space or default_space()
    settings = digest_of([config.to_dict(), num_samples, {k: _domain(v) for k, v in space.items()}])
    inputs = files_identity(train_path, valid_path)
    made_with = digest_of([settings, inputs])  # what an unfinished sweep's record must name to be continued
    sweep = functools.partial(_sweep, config, train_path, valid_path, output, num_samples, space, made_with, force)
    return run_step(Step("the detector sweep", str(output), settings, sweep, inputs), force)


def _domain(value) -> list:
    """A search space entry as data (Tune's domains have no stable repr)."""
    if isinstance(value, dict):  # tune.grid_search
        return ["grid_search", *map(str, value.get("grid_search", []))]
    if not hasattr(value, "sample") or isinstance(value, str):  # a fixed value
        return ["fixed", str(value)]
    return [type(value).__name__, *(str(getattr(value, k, "")) for k in ("categories", "lower", "upper"))]


VIEW_KEYS = ("detect.backbone", "detect.mode", "detect.window", "detect.window_unit", "detect.freeze")


def prepare_stores(config, space: dict, train_path, valid_path) -> list[dict]:
    """Make, on the driver, the span-representation stores of every view the sweep's frozen trials can
    reach (``hades_ray/detect/reps.py``), so that all the trials of a view read one store and none runs
    the backbone. A view key swept over a range is left to the trials (each makes a missing store in its
    process, one at a time)."""
    import itertools

    from hades_ray.train.fit import stored_vectors

    base = config.to_dict()
    values = [space_values(space, k, _current(base, k)) for k in VIEW_KEYS]
    if any(v is None for v in values):
        return []
    made, seen = [], set()
    report = LoadReport()
    train = load_labelled(train_path, config.detect.skip_bad, report)
    valid = load_labelled(valid_path, config.detect.skip_bad, report)
    for combination in itertools.product(*values):
        trial = apply_trial(base, dict(zip(VIEW_KEYS, combination)))
        key = json.dumps([trial.detect.backbone, trial.detect.mode, trial.detect.window, trial.detect.window_unit,
                          trial.detect.freeze])  # fmt: skip
        if key in seen:
            continue
        seen.add(key)
        reps = stored_vectors(trial, trial.detect.mode, {"train": (train, train_path), "valid": (valid, valid_path)})
        if reps is not None:
            made.append(reps[2])
    return made


def _current(base: dict, dotted: str):
    section, name = dotted.split(".")
    return base[section][name]


def _sweep(
    config, train_path, valid_path, output: Path, num_samples: int, space: dict, made_with: str, force: bool
) -> dict:
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler

    from hades_ray.ray_runtime import init_ray
    from hades_ray.train.trial_groups import ReleaseTrainGroups

    experiment = output / EXPERIMENT
    if force:  # a new sweep replaces the one there, never unpickled
        delete(experiment)
        delete(output / "train_runs")
    resume = experiment.exists()
    if resume:
        check_resumable(output, experiment, made_with)
    init_ray(config.ray.address, config.ray.num_cpus)
    stores = [] if resume else prepare_stores(config, space, train_path, valid_path)
    trainable = tune.with_resources(
        tune.with_parameters(
            detector_trial,
            base=config.to_dict(),
            train_path=str(Path(train_path).resolve()),
            valid_path=str(Path(valid_path).resolve()),
            storage=str(output / "train_runs"),
        ),
        functools.partial(trial_resources, config.to_dict()),
    )
    if resume:
        log.info("resuming the sweep in %s", experiment)
        tuner = tune.Tuner.restore(str(experiment), trainable=trainable, resume_unfinished=True, resume_errored=True)
    else:
        save_config(config, output)
        tuner = tune.Tuner(
            trainable,
            param_space=space,
            tune_config=tune.TuneConfig(
                metric="selection_score",
                mode="max",
                num_samples=num_samples,
                reuse_actors=heads_only(config, space),
                max_concurrent_trials=concurrent_trials(config),
                scheduler=ASHAScheduler(
                    time_attr="training_iteration", max_t=config.detect.epochs, grace_period=1, reduction_factor=2
                ),
            ),
            run_config=tune.RunConfig(name=EXPERIMENT, storage_path=str(output), callbacks=[ReleaseTrainGroups()]),
        )
        record_sweep(output, experiment, made_with)  # the Tuner has just written tuner.pkl
    results = tuner.fit()
    best = results.get_best_result(metric="selection_score", mode="max")
    trials = [
        {
            "config": r.config,
            "selection_score": (r.metrics or {}).get("selection_score"),
            "epochs": (r.metrics or {}).get("epoch"),
            "error": str(r.error) if r.error else None,
        }
        for r in results
    ]
    summary = {
        "metric": f"validation {config.detect.selection_metric} (selection_score)",
        "best_config": best.config,
        "best_score": (best.metrics or {}).get("selection_score"),
        "best_metrics": {k: v for k, v in (best.metrics or {}).items() if isinstance(v, (int, float, str))},
        "trials": trials,
        "experiment": str(experiment),
        "train_checkpoints": str(output / "train_runs"),
        "span_reps": stores,
    }
    write_json_atomic(output / "best.json", summary)
    return summary
