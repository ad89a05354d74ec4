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


def throughput(config, device: str, docs: int, seconds: float, clock, sampler) -> tuple[dict, object]:
    """Tokens/s of both stages on ``docs`` demo leads (``measure_stages``), REPLACE's busy share (time inside
    the MLM's forwards over REPLACE's wall time, by ``clock(module, cuda, skip)``), NVML's utilisation
    (sampled every 50 ms by ``sampler(read, every)``) where pynvml is installed; and the sample's counts."""
    from hades_ray.plan.count import count_sample, load_tokenizers
    from hades_ray.plan.measure import measure_stages

    cuda = device.startswith("cuda")
    tokenizers = load_tokenizers(config)
    counts = count_sample(config, "demo", tokenizers, limit=docs, keep_groups=True, device="cuda" if cuda else "cpu")
    clocks, nvml = [], nvml_reader()
    # The encoder: REPLACE runs the MLM head apart, at the filled positions only (perturb/replace.py).
    watch = lambda mlm, _: clocks.append(clock(mlm.base_model, cuda, skip=1))  # noqa: E731
    with sampler(nvml or (lambda: 0), every=0.05) as utilisation:
        measured = measure_stages(config, tokenizers, counts, "paper-sized" if cuda else "configured", device,
                                  seconds, watch=watch)  # fmt: skip
    replace, samples = measured["replace"], utilisation.samples
    replace["busy_share"] = round(clocks[0].take()[0] / max(replace["wall_seconds"], 1e-9), 3)
    replace["nvml_utilisation"] = round(sum(samples) / len(samples) / 100, 3) if nvml else None
    return measured, counts


def check_lines(result: dict) -> list[str]:
    """A device check's figures (``jobs/device_check.py``'s result), one line each."""
    from hades_ray.plan.machine import describe_machine

    measured, same = result["measured"], result["identity"]
    r, k, p = measured["replace"], measured["rank"], result["plan_1m_segments"]
    nvml = f", NVML utilisation {r['nvml_utilisation']:.0%}" if r.get("nvml_utilisation") is not None else ""
    memory = {key: value for key, value in {**r, **k}.items() if key.endswith("_mib")}
    steps = ", ".join(f"{name} {seconds} s" for name, seconds in result["step_seconds"].items())
    return [
        f"machine: {describe_machine(result['machine'])}",
        f"device: {result['device']} ({measured['models']} models; tokens/s per {measured['basis']})",
        f"REPLACE: {r['tokens_per_s']:,.0f} tokens/s ({r['model']}, {r['dtype']})",
        f"RANK:    {k['tokens_per_s']:,.0f} tokens/s ({k['model']}, {k['dtype']})",
        f"REPLACE busy share: {r['busy_share']:.0%} of its wall time inside model forwards{nvml}",
        "peak memory: " + ", ".join(f"{key.removesuffix('_mib')} {value:,.0f} MiB" for key, value in memory.items()),
        f"identity: {same['identical']} of {same['documents']} documents alone vs inside the batch: "
        + ("byte-identical" if same["byte_identical"] else "DIFFERENT"),
        f"plan for {SEGMENTS:,} segments: {p['device_hours']} {p['device_kind']}-hours "
        f"(REPLACE {p['replace_device_hours']}, RANK {p['rank_device_hours']})",
        f"device check finished in {result['seconds']} s ({steps})",
    ]
