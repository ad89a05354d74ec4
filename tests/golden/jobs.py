"""The golden jobs: every sharded job of the CLI run on fixed inputs with fixed seeds.

One definition serves two checks: ``tests/golden/test_golden.py`` compares each job's content with the
one recording in ``tests/golden/golden.json`` (on any machine, within a tolerance), and
``python -m tests.golden.diff --base REV`` (``make golden-diff``) runs these jobs at a base revision
and at the working tree on the same machine and compares their bytes.

    python -m tests.golden.jobs --output DIR [--job NAME ...]

runs the jobs into ``DIR/<job>/`` (inputs and micro models under ``DIR/_inputs``) and writes
``DIR/golden_paths.json``, the absolute paths that the comparison writes as placeholders.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import Callable
from functools import cached_property
from pathlib import Path

from hades_ray.cli import main

# Perturbation: 3 candidates, 3 shards of 20 embedded leads. Seed 5: every REPLACE draw and RANK choice
# has a margin of 11 tolerances or more (seed 1 has a token within 0.3 of one).
PERTURB = ["--input", "demo", "--limit", "20", "--executor", "local", "--examples", "0", "--seed", "5"]
PERTURB += ["--set", "perturb.rank.num_candidates=3", "--set", "perturb.read.shard_size=8"]
TEXTS = [
    "Marie Curie was a physicist and chemist who conducted pioneering research on radioactivity in Paris .",
    "The river flows north through the valley, past three old mills, before it meets the sea near Bergen.",
    "He won the award in 1998 and retired two years later to a farm in Ohio where he wrote poems.",
    "Short one here.",
    "The bridge was built in 1932 by the city council and painted red in 1954.",
]
PROMPTS = ["the city of", "in 1990 the band released their first album", "he was born in", "the river"]
ROUND = ["--set", "select.round_sizes=[50,30]", "--set", "select.min_train_instances=10", "--seed", "0"]
ROUND += ["--set", "detect.epochs=1", "--set", "detect.window=32", "--set", "detect.batch_size=16"]
LR = ["--set", "detect.feature_window=32", "--seed", "0"]
GUARD_THRESHOLD = "0.5"


class Inputs:
    """The inputs every golden job reads, made on first use under ``root`` (micro models under
    ``home``, which must be ``HADES_RAY_HOME`` while the jobs run)."""

    def __init__(self, root: Path, home: Path):
        self.root, self.home = root, home

    @property
    def paths(self) -> dict[str, str]:
        return {str(self.root): "<ROOT>", str(self.home): "<HOME>"}

    def _random_head_detector(self, name: str, backbone: str, mode: str, window: int, seed: int = 0) -> Path:
        """A detector folder with a seeded random head, exported the way training exports one: no
        training, so its scores are fixed by the seed."""
        import torch

        from hades_ray.config import HadesConfig, save_config
        from hades_ray.detect.model import build_classifier, export_detector, trainable_state
        from hades_ray.models.registry import resolve_model

        directory = self.root / "detectors" / name
        settings = {"backbone": backbone, "revision": None, "mode": mode, "window": window}
        settings |= {"pooling": "max", "mlp_layers": 2, "freeze": "all"}
        torch.manual_seed(seed)
        tokenizer, model = build_classifier(resolve_model(backbone), settings)
        _portable_head(model, seed)
        export_detector(directory, trainable_state(model), settings, tokenizer)
        save_config(HadesConfig(), directory)
        return directory

    @cached_property
    def online_detector(self) -> Path:
        return self._random_head_detector("online", "local:gpt2", "online", 160)

    @cached_property
    def offline_detector(self) -> Path:
        return self._random_head_detector("offline", "local:minilm", "offline", 48)

    @cached_property
    def hades_files(self) -> dict[str, Path]:
        """Toy HaDes files: train and valid (labelled), and a test file with a bad line (quarantined by
        ``--skip-bad``) and an unlabelled instance."""
        from hades_ray.detect.synthetic import toy_instances
        from hades_ray.io.hades_format import write_instances

        folder = self.root / "inputs"
        folder.mkdir(parents=True, exist_ok=True)
        test = [json.dumps(i.to_json()) for i in toy_instances(8, seed=3)]
        test.insert(2, '{"replaced": "a ===b=== c", "replaced_ids": [0, 0], "hallucination": 1}')
        test.append(json.dumps({**toy_instances(1, seed=4)[0].to_json(), "hallucination": -1}))
        (folder / "test.jsonl").write_text("\n".join(test) + "\n", encoding="utf-8")
        return {
            "train": write_instances(toy_instances(24, seed=1), folder / "train.jsonl"),
            "valid": write_instances(toy_instances(8, seed=2), folder / "valid.jsonl"),
            "test": folder / "test.jsonl",
        }

    @cached_property
    def peaked_mlm(self) -> Path:
        """The LR features' masked LM: a micro MLM at a wider initializer range (0.1), whose entropies
        differ from word to word by 1e-3 (the default micro MLM's by 1e-5, near its float32 forward's
        own rounding, which the feature scaling then blows up into different detectors on different CPUs)."""
        from hades_ray.models.micro import build_micro_mlm

        return build_micro_mlm(self.root / "models" / "mlm-peaked", initializer_range=0.1)

    @cached_property
    def lr_detector(self) -> Path:
        """An LR detector trained on the toy files (the feature path: peaked micro MLM features, seeded fit)."""
        out = self.root / "detectors" / "lr"
        files = self.hades_files
        args = ["train", "--detector", "lr", "--train", str(files["train"]), "--valid", str(files["valid"])]
        assert main([*args, "--output", str(out), *LR, "--set", f"models.mlm={self.peaked_mlm}"]) == 0
        return out

    @cached_property
    def texts(self) -> Path:
        path = self.root / "inputs" / "texts.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(TEXTS * 2) + "\n", encoding="utf-8")
        return path

    @cached_property
    def prompts(self) -> Path:
        path = self.root / "inputs" / "prompts.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [json.dumps({"id": f"p{k}", "prompt": p}) for k, p in enumerate(PROMPTS)] + ["not json"]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path


def _portable_head(model, seed: int) -> None:
    """The head drawn again the way ``nn.Linear`` draws it (uniform within 1/sqrt(fan_in)), from
    integers: the same bits on every machine (hades_ray/models/micro.py says why)."""
    import torch

    from hades_ray.models.micro import portable_init

    linears = [m for name, m in model.named_modules() if name.startswith("head") and isinstance(m, torch.nn.Linear)]
    for k, linear in enumerate(linears):
        std = 1.0 / math.sqrt(3.0 * linear.in_features)
        portable_init(linear, seed * 100 + k, std)
        if linear.bias is not None:
            with torch.no_grad():
                linear.bias.zero_()


# --- the jobs: each writes its outputs under ``out`` and returns the top folders that are inputs -----


def perturb_micro(inputs: Inputs, out: Path) -> tuple[str, ...]:
    assert main(["perturb", *PERTURB, "--output", str(out)]) == 0
    return ()


def _score(detector: str, extra: list[str]) -> Callable[[Inputs, Path], tuple[str, ...]]:
    def job(inputs: Inputs, out: Path) -> tuple[str, ...]:
        model = getattr(inputs, detector)
        args = [
            "score",
            "--model",
            str(model),
            "--input",
            str(inputs.texts),
            "--output",
            str(out),
            "--executor",
            "local",
        ]
        assert main([*args, "--shard-size", "4", "--words", "all", *extra]) == 0
        return ()

    return job


def _generate(guarded: bool) -> Callable[[Inputs, Path], tuple[str, ...]]:
    def job(inputs: Inputs, out: Path) -> tuple[str, ...]:
        guard = []
        if guarded:
            guard = ["--guard", str(inputs.online_detector), "--threshold", GUARD_THRESHOLD, "--max-retries", "2"]
            guard += ["--html"]
        args = ["generate", "--prompts", str(inputs.prompts), "--output", str(out), "--executor", "local"]
        args += ["--seed", "3", "--max-new-tokens", "16", "--batch-size", "2", "--shard-size", "3", *guard]
        assert main(args) == 0
        if guarded:  # the guard acted: the check covers its resampling, not only its scores
            assert (out / "interventions.jsonl").read_text().strip()
        return ()

    return job


def _round(workdir: Path, index: int) -> None:
    assert main(["round", "--workdir", str(workdir), "--round", str(index), "--executor", "local", *ROUND]) == 0


def select_round_0(inputs: Inputs, out: Path) -> tuple[str, ...]:
    """Round 0 on the synthetic pool of tests/select/test_round.py."""
    from tests.select.fake_pool import build_pool

    build_pool(out / "pool", n_docs=10)
    _round(out, 0)
    return ("pool",)


def select_round_1(inputs: Inputs, out: Path) -> tuple[str, ...]:
    """Round 1 after round 0 and two simulated panels: its detector is trained on their judgments."""
    select_round_0(inputs, out)
    for _ in range(2):
        assert main(["annotations", "simulate", "--workdir", str(out), "--round", "0", *ROUND]) == 0
    _round(out, 1)
    return ("pool",)


def _predict(detector: str, *extra: str) -> Callable[[Inputs, Path], tuple[str, ...]]:
    def job(inputs: Inputs, out: Path) -> tuple[str, ...]:
        model = getattr(inputs, detector)
        args = ["predict", "--model", str(model), "--data", str(inputs.hades_files["test"]), *extra]
        assert main([*args, "--output", str(out / "test.pred.jsonl"), "--skip-bad"]) == 0
        assert (out / "quarantine.jsonl").read_text().strip()  # the bad line, with its reason
        return ()

    return job


JOBS: dict[str, Callable[[Inputs, Path], tuple[str, ...]]] = {
    "perturb_micro": perturb_micro,
    "score_online": _score("online_detector", ["--html"]),
    "score_offline": _score("offline_detector", []),
    "score_lr": _score("lr_detector", []),
    "generate_plain": _generate(guarded=False),
    "generate_guarded": _generate(guarded=True),
    "select_round_0": select_round_0,
    "select_round_1": select_round_1,
    "predict_transformer": _predict("offline_detector"),
    # In this process: predict's Ray executor is predict_transformer's (make test-slow) and detect/test_cli's.
    "predict_lr": _predict("lr_detector", "--executor", "local"),
}
# Jobs that train or score through Ray (Ray Train, Ray Data) whatever their executor.
NEEDS_RAY = {"score_lr", "select_round_0", "select_round_1", "predict_transformer", "predict_lr"}


def run_jobs(output: Path, names: list[str]) -> dict[str, str]:
    """Run ``names`` into ``output/<job>`` on micro models built under ``output/_inputs/home``; returns
    the absolute paths to write as placeholders."""
    from hades_ray.models.micro import build_micro_kit

    inputs = Inputs(output / "_inputs", output / "_inputs" / "home")
    build_micro_kit(inputs.home)
    os.environ["HADES_RAY_HOME"] = str(inputs.home)
    if NEEDS_RAY & set(names):
        from hades_ray.ray_runtime import init_ray

        init_ray(num_cpus=2)
    for name in names:
        print(f"golden job {name}", flush=True)
        JOBS[name](inputs, output / name)
    paths = inputs.paths
    (output / "golden_paths.json").write_text(json.dumps(paths, indent=1) + "\n")
    return paths


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], prog="python -m tests.golden.jobs")
    parser.add_argument("--output", type=Path, required=True, help="folder for the jobs' outputs (made if absent)")
    parser.add_argument("--job", action="append", choices=list(JOBS), help="run only this job (repeatable)")
    return parser.parse_args()


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a private test cluster on loopback, as in the tests
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    args = _parse()
    args.output.mkdir(parents=True, exist_ok=True)
    run_jobs(args.output.resolve(), args.job or list(JOBS))
