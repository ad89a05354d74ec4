"""Ray Train for the span classifier: the per-worker loop and the driver around ``TorchTrainer``.

Rank 0 checkpoints the trained weights (safetensors), the optimizer, the epoch and the resolved
config after every epoch; a restarted worker group resumes from ``ray.train.get_checkpoint()``.
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


def _validate(model, tokenizer, cfg: dict) -> dict:
    from hades_ray.detect.views import score_spans

    items, labels = cfg["valid_items"], [it["label"] for it in cfg["valid_items"]]
    net = getattr(model, "module", model)
    settings = cfg["settings"]
    if cfg.get("stored"):
        from hades_ray.detect.reps import head_scores

        net.eval()  # the head alone on the validation set's stored vectors, as an exported folder scores them
        p = head_scores(net.head, cfg["valid_reps"])
        return binary_metrics(labels, (p >= 0.5).astype(int), p)
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
            seen, total = seen + len(labels), total + float(loss) * len(labels)
        elapsed = time.perf_counter() - began
        metrics = {
            "epoch": epoch,
            "train_loss": total / max(seen, 1),
            "examples": seen * world,
            "train_seconds": elapsed,
            "examples_per_s": seen * world / max(elapsed, 1e-9),
            "resumed": bool(checkpoint),
        }
        if rank == 0:
            metrics.update(_validate(model, tokenizer, cfg))
            score = metrics.get(cfg["selection_metric"], math.nan)
            metrics["selection_score"] = -1.0 if score is None or math.isnan(score) else float(score)
            best = max(best, metrics["selection_score"])
            with storage.scratch_folder("hades_ckpt_") as folder:
                _save(folder, model, optimizer, epoch, metrics, best, cfg)
                ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(str(folder)))
        else:
            ray.train.report(metrics)
        _maybe_fail(cfg, epoch, rank, world)


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
