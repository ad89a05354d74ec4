"""What a measurement ran on, for the record beside its figures: the CPU (model, vector units, the kernels
torch picked), its cores, the load average, and the GPU when one is present. Facts read from the machine
at the time of the run, nothing else, so two records can be compared by what they say."""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path

# The CPU flags that decide which kernels torch, oneDNN and the BLAS run (and so speed and rounding).
VECTOR_FLAGS = re.compile(r"^(sse4_2|avx|avx2|fma|f16c|avx_vnni|avx512\w*|amx\w*)$")
NAMED_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")  # the ones a results page names


def _cpuinfo() -> tuple[str, list[str]]:
    model, flags = platform.processor() or platform.machine(), []
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return model, flags
    for line in lines:
        key, _, value = line.partition(":")
        if key.strip() == "model name" and value.strip():
            model = value.strip()
        elif key.strip() == "flags" and not flags:
            flags = sorted(f for f in value.split() if VECTOR_FLAGS.match(f))
    return model, flags


def _torch_facts() -> dict:
    import torch

    facts = {"torch": torch.__version__, "torch_cpu_kernels": torch.backends.cpu.get_cpu_capability()}
    try:
        facts["cpu_bf16_native"] = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        facts["cpu_bf16_native"] = False
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    facts["gpu"] = {"present": gpus > 0, "count": gpus}
    if gpus:
        facts["gpu"]["name"] = torch.cuda.get_device_name(0)
    return facts


def machine_facts() -> dict:
    """The machine now: CPU model and vector flags, cores (and those this process may use), the load
    average over 1, 5 and 15 minutes, torch's CPU kernels and native bf16, and the GPUs present."""
    model, flags = _cpuinfo()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": model,
        "cpu_vector_flags": flags,
        "cores": os.cpu_count(),
        "cores_usable": usable,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        **_torch_facts(),
    }


def describe_machine(facts: dict) -> str:
    """One sentence of ``machine_facts()`` for a results page."""
    gpu = facts.get("gpu") or {}
    gpus = f"{gpu.get('count', 1)} x {gpu.get('name', 'GPU')}" if gpu.get("present") else "none present"
    load = "/".join(f"{x:.1f}" for x in facts.get("load_average", []))
    flags = ", ".join(f for f in facts.get("cpu_vector_flags", []) if f in NAMED_FLAGS)
    return (
        f"{facts.get('cpu')} ({flags or 'no AVX2'}; torch kernels {facts.get('torch_cpu_kernels')}), "
        f"{facts.get('cores')} cores, load average {load} (1/5/15 min), torch {facts.get('torch')}; "
        f"GPU: {gpus}"
    )
