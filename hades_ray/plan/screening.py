"""Device-hours of the model-in-the-loop rounds' screening over a pool, without and with the store of
span representations.

Every round scores each pool instance not yet judged with the round detector (hades_ray/select).
Without reuse, each round runs the detector's backbone and head over all of them: over a 1M pool the
paper's 14 rounds make about 14M backbone forwards. With the store (``detect.reuse_frozen``, a frozen
backbone: ``detect.freeze: all``), the pool's span representations are made once (one backbone
forward per instance) and every round runs only the MLP head on them. Reading the stored
representations and training the round detectors are not counted (both are the same or smaller
with the store).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

PAPER_ROUNDS = 14


@dataclass
class ScreeningThroughput:
    """Instances per second of one device: the detector whole (backbone and head), and its head alone."""

    detector_instances_per_s: float
    head_instances_per_s: float
    source: str


def unjudged_per_round(pool: int, sizes: list[int]) -> list[int]:
    """The pool instances each round screens: those not judged in an earlier round."""
    screened, judged = [], 0
    for size in sizes:
        screened.append(max(pool - judged, 0))
        judged += size
    return screened


def screening_plan(pool: int, sizes: list[int], throughput: ScreeningThroughput, devices: int) -> dict:
    """Backbone and head forwards and device-hours of ``len(sizes)`` rounds of screening over ``pool``
    instances (``sizes``: instances judged per round), without reuse and with the store."""
    screened = sum(unjudged_per_round(pool, sizes))
    without_s = screened / throughput.detector_instances_per_s
    with_s = pool / throughput.detector_instances_per_s + screened / throughput.head_instances_per_s
    return {
        "pool_instances": pool,
        "rounds": len(sizes),
        "judged": sum(sizes),
        "instances_screened": screened,
        "without_reuse": {
            "backbone_forwards": screened,
            "head_passes": screened,
            "device_hours": round(without_s / 3600, 2),
        },
        "with_store": {"backbone_forwards": pool, "head_passes": screened, "device_hours": round(with_s / 3600, 2)},
        "ratio": round(with_s / without_s, 4) if without_s else 1.0,
        "wall_hours_without": round(without_s / 3600 / devices, 2),
        "wall_hours_with": round(with_s / 3600 / devices, 2),
        "throughput": throughput.__dict__,
    }


def round_sizes(select, rounds: int) -> list[int]:
    """Instances judged in each of ``rounds`` rounds, as the config's ``select`` section schedules them."""
    from hades_ray.select.schedule import round_size

    return [round_size(select, index) for index in range(rounds)]


def measure_screening(config, models: str, device: str, budget_s: float, batch: int = 32) -> dict:
    """Instances/s of the round detector's backbone and head (``detect``'s window and head sizes) on
    ``device``: the configured backbone, or (paper-sized) a bert-base-sized one of random weights
    (speed does not depend on the weights). Token ids are drawn at random: speed does not depend on them."""
    import torch

    backbone, name = _backbone(config, models, device)
    hidden = backbone.config.hidden_size
    head_hidden = config.detect.mlp_hidden or hidden // 2
    head = torch.nn.Sequential(torch.nn.Linear(hidden, head_hidden), torch.nn.Tanh(), torch.nn.Linear(head_hidden, 2))
    head = head.to(device).eval()
    window = min(config.detect.window, getattr(backbone.config, "max_position_embeddings", 512) - 2)
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(5, backbone.config.vocab_size, (batch, window), generator=generator).to(device)
    mask = torch.ones_like(ids)

    @torch.inference_mode()
    def detector() -> None:
        head(backbone(input_ids=ids, attention_mask=mask)[0].amax(dim=1))

    representations = torch.randn(4096, hidden, generator=generator).to(device)

    @torch.inference_mode()
    def head_only() -> None:
        head(representations)

    return {
        "model": name,
        "window_tokens": window,
        "detector_instances_per_s": batch / _seconds_per_call(detector, budget_s, device),
        "head_instances_per_s": len(representations) / _seconds_per_call(head_only, budget_s / 4, device),
    }


def _backbone(config, models: str, device: str):
    """The round detector's backbone (``select.detector_backbone``, else the detector's): the configured
    one, or bert-base-sized (the paper's round detector is "initiated with BERT", §3.3)."""
    from transformers import AutoModel, BertConfig

    from hades_ray.plan.measure import BERT_BASE

    if models == "paper-sized":
        model = AutoModel.from_config(BertConfig(**BERT_BASE))
        return model.eval().to(device), "bert-base-sized (random weights)"
    from hades_ray.models.registry import model_revision, resolve_model
    from hades_ray.select.detector import round_detector_config

    detect = round_detector_config(config).detect
    reference = detect.backbone or config.models.encoder
    model = AutoModel.from_pretrained(resolve_model(reference), revision=model_revision(reference))
    return model.eval().to(device), reference


def _seconds_per_call(call, budget_s: float, device: str) -> float:
    """Seconds of one ``call`` (CPU time on a CPU, one core's own speed; wall time on a GPU), after one
    untimed warm-up, over as many calls as ``budget_s`` allows (at least one)."""
    import torch

    call()
    clock = time.perf_counter if device.startswith("cuda") else time.process_time
    spent, calls, started = 0.0, 0, time.perf_counter()
    while calls == 0 or time.perf_counter() - started < budget_s:
        begin = clock()
        call()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        spent += clock() - begin
        calls += 1
    return spent / calls
