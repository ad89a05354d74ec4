"""Where a round's config goes: ``python -m tests.select.config_trace WORKDIR`` runs round 0, two simulated
panels and round 1 on the synthetic pool of tests/select/test_round.py (the golden job select_round_1's
settings, in-process executor), tracing round 1's ``run_round`` with ``sys.setprofile``; prints the
distinct ``hades_ray`` modules whose frames receive a config as an argument, and how many times that
sequence of modules re-enters a module it had left. A measurement of the code's structure, not a test."""

from __future__ import annotations

import os
import sys
from pathlib import Path

SETTINGS = ["select.round_sizes=[50,30]", "select.min_train_instances=10", "seed=0", "detect.epochs=1"]
SETTINGS += ["detect.window=32", "detect.batch_size=16"]


def trace(call):
    """(distinct modules, re-entries, the sequence) of the hades_ray frames that get a config while ``call`` runs."""
    from hades_ray.config import HadesConfig

    sequence: list[str] = []

    def profile(frame, event, _arg):
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("hades_ray"):
            return
        code = frame.f_code
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        if any(isinstance(frame.f_locals.get(n), HadesConfig) for n in names):
            if not sequence or sequence[-1] != module:
                sequence.append(module)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return len(set(sequence)), len(sequence) - len(set(sequence)), sequence


def main(workdir: Path) -> None:
    from hades_ray.config import load_config
    from hades_ray.models.micro import build_micro_kit
    from hades_ray.pipeline.executor import Executor
    from hades_ray.ray_runtime import init_ray
    from tests.select.fake_pool import build_pool

    build_micro_kit(workdir / "home")
    os.environ["HADES_RAY_HOME"] = str(workdir / "home")
    init_ray(num_cpus=2)
    from hades_ray.select.round import run_round

    try:
        from hades_ray.annotate.simulate import simulate_judgments
    except ImportError:  # older checkouts, measured for comparison, kept it in select/
        from hades_ray.select.simulate import simulate_judgments

    build_pool(workdir / "pool", n_docs=10)
    config = load_config(overrides=SETTINGS)
    run_round(config, workdir, 0, executor=Executor("local"))
    for _ in range(2):
        simulate_judgments(config, workdir, 0)
    modules, reentries, sequence = trace(lambda: run_round(config, workdir, 1, executor=Executor("local")))
    print(" -> ".join(sequence))
    print(f"modules receiving the config: {modules}; re-entries: {reentries}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
