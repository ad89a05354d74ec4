"""One device check (``make device-check``): whether the perturbation job meets its budget on the device at
hand. With paper-sized random-weight bf16 models on CUDA (hades_ray/plan/device.py): REPLACE and RANK
tokens/s, REPLACE's device busy share, peak device memory, byte identity of the first 10 kept documents
perturbed again alone, and the device-hours of 1M segments (README, "make device-check"). On a CPU the
same steps with the micro models (under 2 minutes): they check the path, not the speed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.pipeline import storage
from hades_ray.pipeline.laps import Laps
from hades_ray.plan.device import build_models, check_config, check_lines, identity, segments_plan, throughput
from jobs.bench_common import ForwardClock, Sampler, options

CPU_IDENTITY_CANDIDATES = 4  # per lead in the identity check on a CPU (the preset's 20 on CUDA)


def main(argv=None) -> int:
    many = f"(default: the preset's on CUDA, {CPU_IDENTITY_CANDIDATES} on a CPU)"
    args = options(__doc__, {
        "--device": ("auto", "auto: cuda when present", {"choices": ("auto", "cpu", "cuda")}),
        "--docs": (200, "demo leads: the sample and the identity check's batch"),
        "--alone": (10, "leads perturbed alone for the identity check"),
        "--seconds": (None, "measuring time per model stage (default: 5 on CUDA, 1 on a CPU)", {"type": float}),
        "--identity-candidates": (None, f"candidates per lead in the identity check {many}", {"type": int}),
        "--output": (None, "also write the figures as JSON", {"metavar": "CHECK.json"}),
    }, argv)  # fmt: skip

    import torch

    from hades_ray.plan.machine import machine_facts

    device = "cuda" if args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available()) else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        print("device_check.py: error: --device cuda: this machine has no CUDA device", file=sys.stderr)
        return 2  # argparse's usage error
    torch.set_num_threads(1) if device == "cpu" else None
    seconds = args.seconds if args.seconds is not None else (5.0 if device == "cuda" else 1.0)
    machine, laps = machine_facts(), Laps()  # the load the check starts under; where its own time goes
    with storage.scratch_folder("hades_device_check_") as tmp:
        models = build_models(Path(tmp), device)
        config = check_config(*models, device)
        laps.lap("models")
        measured, counts = throughput(config, device, args.docs, seconds, ForwardClock, Sampler)
        laps.lap("throughput")
        # The identity check needs no more candidates than it takes to compare bytes; on a CPU, RANK's
        # micro GPT-2 (a 30,522-token vocabulary) would spend most of the check on the preset's 20.
        candidates = args.identity_candidates or (None if device == "cuda" else CPU_IDENTITY_CANDIDATES)
        same = identity(check_config(*models, device, candidates), Path(tmp), args.docs, args.alone)
        laps.lap("identity")
    result = {"machine": machine, "device": measured["device"], "measured": measured, "identity": same}
    result["plan_1m_segments"] = segments_plan(counts, measured, device)
    result["seconds"], result["step_seconds"] = round(laps.total(), 1), laps.laps
    print("\n".join(check_lines(result)))
    if args.output:
        storage.write(args.output, json.dumps(result, indent=2) + "\n")
    return 0 if same["byte_identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
