"""Driver of the span-classifier training: ``TorchTrainer`` over a Ray Data train set, then export.

The best epoch by the validation metric (G-Mean by default) is exported as a plain detector folder;
Ray's own run folder (every kept checkpoint) stays under ``output_dir/ray_train``. A head alone on stored
span vectors with one worker and no GPU trains in this process instead (``head_in_process``;
``train/loop.py`` says why): there is no Ray run folder then, and the same detector folder.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from hades_ray.config import HadesConfig
from hades_ray.train.learning_rate import resolve_lr
from hades_ray.detect.settings import TOKENS
from hades_ray.train.loop import FAULT_ENV, class_weights, fit_head, to_rows, train_loop_per_worker
from hades_ray.io.hades_format import Instance
from hades_ray.pipeline.storage import delete

log = logging.getLogger(__name__)
RUN_NAME = "detector"


def detector_settings(config: HadesConfig, mode: str) -> dict:
    """What a saved detector must remember to rebuild itself and to score the same way."""
    d = config.detect
    backbone = d.backbone or config.models.encoder
    settings = {
        "backbone": backbone,
        "revision": config.models.revisions.get(backbone),  # the hub commit it trained on (None: local)
        "mode": mode,
        "window": d.window,
        "pooling": d.pooling,
        "mlp_layers": d.mlp_layers,
        "freeze": d.freeze,
    }
    if d.mlp_hidden:  # h/2 is what a description without the key means
        settings["mlp_hidden"] = d.mlp_hidden
    if d.layer != -1:  # the last hidden state is what a description without the key means
        settings["layer"] = d.layer
    if d.window_unit != TOKENS:  # a token window is what a description without the key means (spans.window_unit)
        settings["window_unit"] = d.window_unit
    return settings


def loop_config(config: HadesConfig, train: list[Instance], valid: list[Instance], mode: str, reps=None) -> dict:
    """The per-worker loop's settings; ``reps`` (train vectors, validation vectors) when the frozen
    backbone's span vectors come from a store (``hades_ray/detect/reps.py``)."""
    from hades_ray.models.registry import resolve_model

    d = config.detect
    settings = detector_settings(config, mode)
    stored = {}
    if reps is not None:
        stored = {"stored": True, "hidden": int(reps[0].shape[1]), "valid_reps": reps[1]}
    return {
        **stored,
        "settings": settings,
        "source": resolve_model(settings["backbone"]),
        "config": config.to_dict(),
        "lr": resolve_lr(config),  # detect.lr=0 means the paper's rate for the backbone's family
        "epochs": d.epochs,
        "batch_size": d.batch_size,
        "seed": config.seed,
        "torch_threads": d.torch_threads,
        "selection_metric": d.selection_metric,
        "class_weights": class_weights([i.label for i in train], d.class_weighting),
        "valid_items": [{"words": i.words, "start": i.start, "end": i.end, "label": i.label} for i in valid],
        "fault_marker": os.environ.get(FAULT_ENV) or None,
    }


def train_dataset(train: list[Instance], reps=None):
    """The Ray Data train set: the instances' words and spans, or their stored span vectors."""
    import ray.data

    from hades_ray.train.loop import rep_rows

    return ray.data.from_items(rep_rows(reps[0], train) if reps is not None else to_rows(train))


def fit_transformer(
    config: HadesConfig,
    train: list[Instance],
    valid: list[Instance],
    output_dir: Path,
    mode: str,
    workers: int,
    reps=None,
):
    """Train on ``workers`` Ray Train workers (on ``reps``, the stored span vectors of train and valid,
    when given; the head alone in this process where ``head_in_process``); returns (the best epoch's
    weights, its metrics, the last epoch's metrics)."""
    from ray.train import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    d = config.detect
    storage = (Path(output_dir) / "ray_train").resolve()
    # A fresh fit each time: Train V2 would otherwise restore a same-named run trained on other data.
    delete(storage / RUN_NAME)
    if head_in_process(reps, workers, d.use_gpu):
        epochs = []
        state, best = fit_head(loop_config(config, train, valid, mode, reps), reps[0], [i.label for i in train],
                               epochs.append)  # fmt: skip
        log.info("best epoch %d: %s %.4f (the head alone, in this process)", best["epoch"], d.selection_metric,
                 best["selection_score"])  # fmt: skip
        return state, best, epochs[-1]
    trainer = TorchTrainer(
        train_loop_per_worker,
        train_loop_config={**loop_config(config, train, valid, mode, reps), "run_folder": str(storage)},
        scaling_config=ScalingConfig(
            num_workers=workers, use_gpu=d.use_gpu, resources_per_worker={"CPU": d.worker_cpus}
        ),
        run_config=RunConfig(
            name=RUN_NAME,
            storage_path=str(storage),
            failure_config=FailureConfig(max_failures=d.max_failures),
            checkpoint_config=CheckpointConfig(
                num_to_keep=2, checkpoint_score_attribute="selection_score", checkpoint_score_order="max"
            ),
        ),
        datasets={"train": train_dataset(train, reps)},
    )
    result = trainer.fit()
    if result.error:
        raise result.error
    best_checkpoint, best_metrics = max(
        result.best_checkpoints, key=lambda cm: (cm[1]["selection_score"], -cm[1]["epoch"])
    )
    log.info("best epoch %d: %s %.4f", best_metrics["epoch"], d.selection_metric, best_metrics["selection_score"])
    return checkpoint_weights(best_checkpoint), best_metrics, result.metrics


def head_in_process(reps, workers: int, use_gpu: bool) -> bool:
    """Whether a fit trains the head alone in the calling process (``train/loop.py`` ``fit_head``): on
    stored span vectors, with one worker and no GPU. Data-parallel workers and GPUs stay with Ray Train."""
    return reps is not None and workers == 1 and not use_gpu


def checkpoint_weights(checkpoint) -> dict:
    """The trained weights a Ray Train checkpoint holds (safetensors)."""
    from safetensors.torch import load_file

    with checkpoint.as_directory() as folder:
        return load_file(os.path.join(folder, "weights.safetensors"))


def export_best(state: dict, settings: dict, output_dir: Path) -> Path:
    """Write the best epoch's weights and the backbone's tokenizer as the detector folder."""
    from hades_ray.detect.model import export_detector, load_tokenizer
    from hades_ray.models.registry import resolve_model

    tokenizer = load_tokenizer(resolve_model(settings["backbone"]), settings.get("revision"))
    return export_detector(output_dir, state, settings, tokenizer)
