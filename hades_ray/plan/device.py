"""What ``make device-check`` (jobs/device_check.py) checks on the device at hand, apart from its timers:
the models it runs, the config it runs them with, the byte identity of documents perturbed alone and
inside a batch, and the plan for the paper's pool from the measured tokens/s.

On CUDA the models are paper-sized (BERT-base and GPT-2 built from their configurations, random weights:
speed does not depend on the weights) in bfloat16; on a CPU the tests' micro models, so that the check
proves the path, not the speed. Nothing is downloaded.
"""

from __future__ import annotations

import json
from pathlib import Path

from hades_ray.pipeline import storage

SEGMENTS = 1_000_000  # the paper's pool: 1M perturbed segments


def nvml_reader():
    """A function that reads GPU 0's utilisation (percent) from NVML; None without pynvml or NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception:  # noqa: BLE001 - no pynvml or no NVML: the CUDA events' figure stands alone
        return None
    return lambda: pynvml.nvmlDeviceGetUtilizationRates(handle).gpu


def build_models(folder: Path, device: str) -> tuple[str, str]:
    """(MLM folder, causal LM folder): the tests' micro models, or on CUDA paper-sized random-weight models
    with the same tokenizers (the paper's models would need a download)."""
    from hades_ray.models.micro import build_micro_kit

    models = build_micro_kit(folder)
    if device.startswith("cuda"):
        import torch

        from hades_ray.plan.measure import paper_sized_models

        mlm, lm = paper_sized_models("cpu", torch.float32)
        storage.save_pretrained(mlm, models / "mlm")
        storage.save_pretrained(lm, models / "gpt2")
    return str(models / "mlm"), str(models / "gpt2")


def check_config(mlm: str, lm: str, device: str, candidates: int | None = None):
    """The local preset on these models (with ``candidates`` per lead where given); on CUDA both model
    stages in bfloat16 on the device."""
    from hades_ray.config import load_config

    overrides = [f"models.mlm={mlm}", f"models.causal_lm={lm}"]
    overrides += [f"perturb.rank.num_candidates={candidates}"] if candidates else []
    if device.startswith("cuda"):
        overrides += ["perturb.replace.dtype=bfloat16", "perturb.rank.dtype=bfloat16"]
        overrides += [f"perturb.resources.{stage}.num_gpus=1" for stage in ("replace", "rank")]
    return load_config("local", overrides=overrides)


def identity(config, workdir: Path, docs: int, alone: int) -> dict:
    """Perturb the first ``docs`` demo leads, then the first ``alone`` of the documents that run kept,
    alone (their leads as a JSONL input, read by the job's own reader): each one's pool row must be the
    same bytes both times (the whole job, in-process, on the device the config names)."""
    from hades_ray.io.demo_corpus import read_demo_records

    inside = pool_rows(config, "demo", workdir / "inside", docs)
    chosen = sorted(inside.values(), key=lambda r: r["row"])[:alone]
    records, leads = read_demo_records(), workdir / "alone.jsonl"  # a demo lead's row is its record's index
    storage.write(leads, "".join(json.dumps(records[r["row"]]) + "\n" for r in chosen))
    by_itself = pool_rows(config, str(leads), workdir / "alone", None)
    ids = [r["doc_id"] for r in chosen]
    same = sum(row_content(by_itself.get(r["doc_id"])) == row_content(r) for r in chosen)
    return {"documents": len(ids), "identical": same, "byte_identical": bool(ids) and same == len(ids), "doc_ids": ids}


def pool_rows(config, source: str, output: Path, limit: int | None) -> dict[str, dict]:
    """The perturbation job's pool rows for ``source`` (run in this process), by document id."""
    import pyarrow.parquet as pq

    from hades_ray.perturb.runner import run_perturb
    from hades_ray.pipeline.executor import Executor

    run_perturb(config, source, output, limit=limit, executor=Executor(kind="local"))
    return {r["doc_id"]: r for r in pq.read_table(output / "pool").to_pylist()}


def row_content(row: dict | None) -> str | None:
    """A pool row as bytes, without ``shard`` and ``row`` (where its lead sat in its input)."""
    if row is None:
        return None
    return json.dumps({k: v for k, v in row.items() if k not in ("shard", "row")}, sort_keys=True)


def segments_plan(counts, measured: dict, device: str, segments: int = SEGMENTS) -> dict:
    """Device-hours for ``segments`` perturbed segments from the measured tokens/s (``measure_stages``)."""
    from hades_ray.plan.budget import Throughput, make_plan

    kind = "GPU" if device.startswith("cuda") else "CPU core"
    tokens = measured["replace"]["tokens_per_s"], measured["rank"]["tokens_per_s"]
    docs_per_s = counts.read / max(counts.prepare_seconds, 1e-6)
    rates = Throughput(*tokens, docs_per_s, f"jobs/device_check.py on {measured['device']}", kind)
    result = make_plan(counts, rates, devices=1, perturbed_docs=segments)
    return {key: result[key] for key in ("device_kind", "replace_device_hours", "rank_device_hours", "device_hours")}
