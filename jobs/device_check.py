"""One device check (``make device-check``): the figures that say whether the perturbation job meets its
budget on the device at hand, in one run.

On a CUDA device, with paper-sized random-weight models in bfloat16 (hades_ray/plan/device.py):

1. REPLACE and RANK tokens/s (``hades_ray/plan/measure.py``, the job's own functions on the demo
   leads' real model inputs);
2. the device's busy share during REPLACE: time inside the MLM's forwards (CUDA events around each
   forward) over REPLACE's wall time, and NVML's utilisation where ``pynvml`` is installed;
3. peak device memory;
4. byte identity: the first 10 documents that a run on 200 leads kept, perturbed again alone (the
   whole job, in-process, on the device): their pool rows must be the same bytes;
5. the plan's device-hours for 1M perturbed segments from those figures (``hades_ray/plan/budget.py``).

On a CPU the same steps run with the tests' micro models (in under 2 minutes: 1 s of measuring per
stage, 4 candidates per lead in the identity check): the figures then check the path, not the speed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.pipeline import storage
from hades_ray.pipeline.laps import Laps
from hades_ray.plan.device import SEGMENTS, build_models, check_config, identity, nvml_reader, segments_plan
from jobs.bench_common import ForwardClock, Sampler

CPU_IDENTITY_CANDIDATES = 4  # per lead in the identity check on a CPU (the preset's 20 on CUDA)


def throughput(config, device: str, docs: int, seconds: float) -> tuple[dict, object]:
    """Tokens/s of both stages, REPLACE's busy share and peak memory; and the sample's counts."""
    from hades_ray.plan.count import count_sample, load_tokenizers
    from hades_ray.plan.measure import measure_stages

    tokenizers = load_tokenizers(config)
    device_type = "cuda" if device.startswith("cuda") else "cpu"
    counts = count_sample(config, "demo", tokenizers, limit=docs, keep_groups=True, device=device_type)
    clocks, models = [], "paper-sized" if device.startswith("cuda") else "configured"
    # The encoder: REPLACE runs the MLM head apart, at the filled positions only (perturb/replace.py).
    watch = lambda mlm, _: clocks.append(ForwardClock(mlm.base_model, device.startswith("cuda"), skip=1))  # noqa: E731
    nvml = nvml_reader()
    with Sampler(nvml or (lambda: 0), every=0.05) as utilisation:  # sampled every 50 ms while REPLACE runs
        measured = measure_stages(config, tokenizers, counts, models, device, seconds, watch=watch)
    busy = clocks[0].take()[0] / max(measured["replace"]["wall_seconds"], 1e-9)
    measured["replace"]["busy_share"] = round(busy, 3)
    samples = utilisation.samples
    measured["replace"]["nvml_utilisation"] = round(sum(samples) / len(samples) / 100, 3) if nvml else None
    return measured, counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="auto: cuda when present")
    parser.add_argument("--docs", type=int, default=200, help="demo leads: the sample and the identity check's batch")
    parser.add_argument("--alone", type=int, default=10, help="leads perturbed alone for the identity check")
    parser.add_argument(
        "--seconds", type=float, default=None, help="measuring time per model stage (default: 5 on CUDA, 1 on a CPU)"
    )
    parser.add_argument(
        "--identity-candidates",
        type=int,
        default=None,
        help="candidates per lead in the identity check "
        f"(default: the preset's on CUDA, {CPU_IDENTITY_CANDIDATES} on a CPU)",
    )
    parser.add_argument("--output", default=None, metavar="CHECK.json", help="also write the figures as JSON")
    args = parser.parse_args(argv)

    import torch

    device = "cuda" if args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available()) else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: this machine has no CUDA device")
    torch.set_num_threads(1) if device == "cpu" else None
    seconds = args.seconds if args.seconds is not None else (5.0 if device == "cuda" else 1.0)
    from hades_ray.plan.machine import machine_facts

    machine = machine_facts()  # before the run: the load it starts under
    laps = Laps()  # where the check's own time goes
    with storage.scratch_folder("hades_device_check_") as tmp:
        models = build_models(Path(tmp), device)
        config = check_config(*models, device)
        laps.lap("models")
        measured, counts = throughput(config, device, args.docs, seconds)
        laps.lap("throughput")
        # The identity check needs no more candidates than it takes to compare bytes; on a CPU, RANK's
        # micro GPT-2 (a 30,522-token vocabulary) would spend most of the check on the preset's 20.
        candidates = args.identity_candidates or (None if device == "cuda" else CPU_IDENTITY_CANDIDATES)
        same = identity(check_config(*models, device, candidates), Path(tmp), args.docs, args.alone)
        laps.lap("identity")
    result = {"machine": machine, "device": measured["device"], "measured": measured, "identity": same}
    result["plan_1m_segments"] = segments_plan(counts, measured, device)
    result["seconds"], result["step_seconds"] = round(laps.total(), 1), laps.laps
    report(result)
    if args.output:
        storage.write(args.output, json.dumps(result, indent=2) + "\n")
    return 0 if same["byte_identical"] else 1


def report(result: dict) -> None:
    """The figures, one line each."""
    from hades_ray.plan.machine import describe_machine

    measured = result["measured"]
    r, k, p = measured["replace"], measured["rank"], result["plan_1m_segments"]
    same = result["identity"]
    print(f"machine: {describe_machine(result['machine'])}")
    print(f"device: {result['device']} ({measured['models']} models; tokens/s per {measured['basis']})")
    print(f"REPLACE: {r['tokens_per_s']:,.0f} tokens/s ({r['model']}, {r['dtype']})")
    print(f"RANK:    {k['tokens_per_s']:,.0f} tokens/s ({k['model']}, {k['dtype']})")
    nvml = f", NVML utilisation {r['nvml_utilisation']:.0%}" if r.get("nvml_utilisation") is not None else ""
    print(f"REPLACE busy share: {r['busy_share']:.0%} of its wall time inside model forwards{nvml}")
    memory = {key: value for key, value in {**r, **k}.items() if key.endswith("_mib")}
    print("peak memory: " + ", ".join(f"{key.removesuffix('_mib')} {value:,.0f} MiB" for key, value in memory.items()))
    verdict = "byte-identical" if same["byte_identical"] else "DIFFERENT"
    print(f"identity: {same['identical']} of {same['documents']} documents alone vs inside the batch: {verdict}")
    print(
        f"plan for {SEGMENTS:,} segments: {p['device_hours']} {p['device_kind']}-hours "
        f"(REPLACE {p['replace_device_hours']}, RANK {p['rank_device_hours']})"
    )
    steps = ", ".join(f"{name} {seconds} s" for name, seconds in result["step_seconds"].items())
    print(f"device check finished in {result['seconds']} s ({steps})")


if __name__ == "__main__":
    sys.exit(main())
