"""The span classifier's training loops: Ray Train's per-worker loop, and the head alone in one process.

Ray Train: rank 0 checkpoints the trained weights (safetensors), the optimizer, the epoch and the resolved
config after every epoch; a restarted worker group resumes from ``ray.train.get_checkpoint()``.

The head alone (``fit_head``): a frozen backbone's span vectors come from a store (``detect/reps.py``) and
one worker would train a 384 -> 192 -> 2 MLP in milliseconds per epoch, so a Ray Train worker group (its
processes, its Ray Data ingest, its checkpoints: tens of seconds) would be nearly all of a fit. With one
worker and no GPU the head trains in the calling process: the driver of ``train``, a round's fold, a grid
cell or a Tune trial (which reports each epoch to Tune itself). Both loops build each epoch's figures with
``epoch_figures``, so ``metrics.json`` and Tune see the same fields either way.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import numpy as np
import torch

from hades_ray.detect.spans import encode_spans, window_unit
from hades_ray.io.hades_format import Instance
from hades_ray.metrics import binary_metrics
from hades_ray.pipeline import storage

GROUP_KEY = "train_placement_group"  # in each epoch's report to Ray Train and Tune, never in a saved file
FAULT_ENV = "HADES_RAY_INJECT_FAULT"  # marker-file path: one worker raises once after epoch 0 (tests)


def to_rows(instances: list[Instance]) -> list[dict]:
    """Flat rows for Ray Data: words joined by single spaces so word offsets are plain arithmetic."""
    return [
        {"row": i, "text": " ".join(inst.words), "start": inst.start, "end": inst.end, "label": inst.label}
        for i, inst in enumerate(instances)
    ]


def rep_rows(vectors: np.ndarray, instances: list[Instance]) -> list[dict]:
    """Rows for Ray Data when the frozen backbone's span vectors are stored: each one's vector and label."""
    return [{"rep": v, "label": inst.label} for v, inst in zip(vectors, instances)]


def rows_to_items(rows: dict) -> list[dict]:
    """Ray Data batch columns (``text``, ``start``, ``end``) back to word lists."""
    return [
        {"words": str(t).split(" "), "start": int(s), "end": int(e)}
        for t, s, e in zip(rows["text"], rows["start"], rows["end"])
    ]


def _resume(model, optimizer, checkpoint) -> tuple[int, float]:
    from safetensors.torch import load_file

    with checkpoint.as_directory() as folder:
        model.load_state_dict(load_file(os.path.join(folder, "weights.safetensors")), strict=False)
        optimizer.load_state_dict(torch.load(os.path.join(folder, "optimizer.pt"), weights_only=True))
        state = json.loads(Path(folder, "state.json").read_text())
    return state["epoch"] + 1, state["best_score"]


def _save(folder: Path, model, optimizer, epoch: int, metrics: dict, best: float, cfg: dict) -> None:
    from hades_ray.detect.model import trainable_state

    storage.save_safetensors(trainable_state(model), folder / "weights.safetensors")
    with storage.open_atomic(folder / "optimizer.pt", "wb") as handle:
        torch.save(optimizer.state_dict(), handle)
    state = {
        "epoch": epoch,
        "metrics": metrics,
        "best_score": best,
        "settings": cfg["settings"],
        "config": cfg["config"],
    }
    storage.write(folder / "state.json", json.dumps(state, indent=2, default=str))


def group_figure() -> dict:
    """``{GROUP_KEY: id}`` of the placement group this Ray Train worker runs in ({} outside one): a Tune
    sweep removes it when it ends the trial (``train/trial_groups.py`` says why Ray does not)."""
    import ray

    group = ray.util.get_current_placement_group()
    return {GROUP_KEY: group.id.hex()} if group else {}


def epoch_figures(epoch: int, examples: int, train_loss: float, seconds: float) -> dict:
    """One epoch's training figures, as ``metrics.json`` and Tune record them."""
    return {
        "epoch": epoch,
        "train_loss": train_loss,
        "examples": examples,
        "train_seconds": seconds,
        "examples_per_s": examples / max(seconds, 1e-9),
    }


def validation_figures(model, tokenizer, cfg: dict) -> dict:
    """The validation set's metrics and ``selection_score`` (the selection metric, -1 where undefined)."""
    metrics = _validate(model, tokenizer, cfg)
    score = metrics.get(cfg["selection_metric"], math.nan)
    metrics["selection_score"] = -1.0 if score is None or math.isnan(score) else float(score)
    return metrics


def _validate(model, tokenizer, cfg: dict) -> dict:
    """The validation set scored by detect/'s own routes, as the exported detector will score it: its
    stored span vectors through the head (``reps.head_scores``, the stored route's), or each span in its
    own view (``views.score_spans``, what ``Scorer.score_spans`` runs)."""
    from hades_ray.detect.reps import head_scores
    from hades_ray.detect.views import score_spans

    items, labels = cfg["valid_items"], [it["label"] for it in cfg["valid_items"]]
    net = getattr(model, "module", model)
    settings = cfg["settings"]
    if cfg.get("stored"):
        net.eval()
        p = head_scores(net.head, cfg["valid_reps"])
    else:
        view = settings["mode"], settings["window"]
        p = score_spans(net, tokenizer, items, *view, cfg["batch_size"], window_unit(settings))
    return binary_metrics(labels, (p >= 0.5).astype(int), p)


def train_loop_per_worker(cfg: dict) -> None:
    import ray.train
    import ray.train.torch

    from hades_ray.detect.model import SpanHead, build_classifier

    torch.set_num_threads(cfg["torch_threads"])
    torch.manual_seed(cfg["seed"])
    rank, world = ray.train.get_context().get_world_rank(), ray.train.get_context().get_world_size()
    settings = cfg["settings"]
    stored = bool(cfg.get("stored"))  # the frozen backbone's span vectors come with the rows (detect/reps.py)
    if stored:
        tokenizer, model = None, SpanHead(cfg["hidden"], settings["mlp_layers"], settings.get("mlp_hidden", 0))
    else:
        tokenizer, model = build_classifier(cfg["source"], settings)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=cfg["lr"])
    start, best = 0, -math.inf
    checkpoint = ray.train.get_checkpoint()
    if checkpoint:
        start, best = _resume(model, optimizer, checkpoint)
    # A fully trainable backbone has parameters the span head never uses (BERT's pooler): DDP must know.
    model = ray.train.torch.prepare_model(
        model, parallel_strategy_kwargs={"find_unused_parameters": settings["freeze"] == "none"}
    )
    loss_fn = torch.nn.CrossEntropyLoss(weight=torch.tensor(cfg["class_weights"], dtype=torch.float32))
    shard = ray.train.get_dataset_shard("train")
    for epoch in range(start, cfg["epochs"]):
        model.train()
        torch.manual_seed(cfg["seed"] + epoch)
        began, seen, total = time.perf_counter(), 0, 0.0
        for batch in shard.iter_batches(
            batch_size=cfg["batch_size"],
            batch_format="numpy",
            local_shuffle_buffer_size=4 * cfg["batch_size"],
            local_shuffle_seed=cfg["seed"] + epoch,
        ):
            device = ray.train.torch.get_device()
            labels = torch.as_tensor(batch["label"], dtype=torch.long, device=device)
            if stored:
                logits = model(torch.as_tensor(np.asarray(batch["rep"], dtype=np.float32), device=device))
            else:
                view = settings["mode"], settings["window"], window_unit(settings)
                enc = encode_spans(tokenizer, rows_to_items(batch), *view)
                logits = model(**{k: v.to(device) for k, v in enc.items()})
            loss = loss_fn(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            seen, total = seen + len(labels), total + loss.item() * len(labels)
        metrics = epoch_figures(epoch, seen * world, total / max(seen, 1), time.perf_counter() - began)
        metrics["resumed"] = bool(checkpoint)
        if rank == 0:
            metrics.update(validation_figures(model, tokenizer, cfg))
            best = max(best, metrics["selection_score"])
            with storage.scratch_folder("hades_ckpt_") as folder:
                _save(folder, model, optimizer, epoch, metrics, best, cfg)
                saved = ray.train.Checkpoint.from_directory(str(folder))
                ray.train.report({**metrics, **group_figure()}, checkpoint=saved)
        else:
            ray.train.report({**metrics, **group_figure()})
        _maybe_fail(cfg, epoch, rank, world)


def fit_head(cfg: dict, reps: np.ndarray, labels: list[int], on_epoch) -> tuple[dict, dict]:
    """Train the head alone on stored span vectors in this process, as ``train_loop_per_worker`` does on
    one worker: the same head, optimizer, class weights, batch size and validation; each epoch's batches
    in a seeded shuffle of the whole set. ``on_epoch(metrics)`` sees every epoch's figures (a Tune
    trial reports them there). Returns the best epoch's (weights, metrics): the highest selection score,
    the earliest epoch among ties, as the Ray Train path keeps its best checkpoint."""
    from hades_ray.detect.model import SpanHead, trainable_state

    torch.set_num_threads(cfg["torch_threads"])
    torch.manual_seed(cfg["seed"])
    settings = cfg["settings"]
    model = SpanHead(cfg["hidden"], settings["mlp_layers"], settings.get("mlp_hidden", 0))
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    loss_fn = torch.nn.CrossEntropyLoss(weight=torch.tensor(cfg["class_weights"], dtype=torch.float32))
    x = torch.as_tensor(np.asarray(reps, dtype=np.float32))
    y = torch.as_tensor(np.asarray(labels, dtype=np.int64))
    best_state, best = {}, {"selection_score": -math.inf}
    for epoch in range(cfg["epochs"]):
        model.train()
        torch.manual_seed(cfg["seed"] + epoch)
        order = torch.as_tensor(np.random.default_rng(cfg["seed"] + epoch).permutation(len(y)))
        began, total = time.perf_counter(), 0.0
        for lo in range(0, len(y), cfg["batch_size"]):
            batch = order[lo : lo + cfg["batch_size"]]
            loss = loss_fn(model(x[batch]), y[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch)
        metrics = epoch_figures(epoch, len(y), total / max(len(y), 1), time.perf_counter() - began)
        metrics.update(validation_figures(model, None, cfg))
        if metrics["selection_score"] > best["selection_score"]:
            best_state, best = trainable_state(model), metrics
        on_epoch(metrics)
    return best_state, best


def _maybe_fail(cfg: dict, epoch: int, rank: int, world: int) -> None:
    marker = cfg.get("fault_marker")
    if marker and epoch == 0 and rank == world - 1 and not os.path.exists(marker):
        # Raised once rank 0's epoch-0 checkpoint is in the run folder and Train has had a moment to
        # register it: the test is of the resume, not of a fault that beats the checkpoint's report.
        deadline, run = time.time() + 60, Path(cfg.get("run_folder") or ".")
        while time.time() < deadline and not any(run.rglob("state.json")):
            time.sleep(0.2)
        time.sleep(3.0)
        storage.write(marker, "raised once\n")
        raise RuntimeError(f"injected fault on rank {rank} after epoch {epoch} ({FAULT_ENV})")


def class_weights(labels: list[int], scheme: str) -> list[float]:
    """Inverse class frequency (``balanced``, as scikit-learn defines it) or uniform weights."""
    counts = np.bincount(np.asarray(labels, dtype=int), minlength=2).astype(float)
    if scheme != "balanced" or (counts == 0).any():
        return [1.0, 1.0]
    return list(counts.sum() / (2 * counts))


def adam_epochs(model, lr: float, epochs: int, batches, validate=None) -> None:
    """``epochs`` of Adam (``lr``, over the parameters that train) on ``batches()``: (inputs, labels), a dict of
    inputs being the model's keywords; ``validate()`` after each epoch: the plain training loop of a benchmark."""
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    for _epoch in range(epochs):
        model.train()
        for inputs, labels in batches():
            logits = model(**inputs) if isinstance(inputs, dict) else model(inputs)
            loss = torch.nn.functional.cross_entropy(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if validate:
            validate()
