"""``Detector.score`` gives ``hades-ray score``'s bits (its stages run with ``detect.torch_threads``
threads, in a Ray actor or in this process) while the caller's torch keeps two threads, under the
kernels this CPU picks and under forced AVX2 ones (a user's machine need not pick what ours does)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import json, sys, torch
from hades_ray import Detector
from hades_ray.cli import main
torch.set_num_threads(2)  # a notebook's default on two cores, not the actors' one thread
texts, out, executor = sys.argv[1], sys.argv[3], sys.argv[4]
for k, folder in enumerate(sys.argv[2].split(",")):
    assert main(["score", "--model", folder, "--input", texts, "--output", f"{out}/{k}", "--executor", executor]) == 0
    torch.set_num_threads(2)  # the local executor's stage set this process's threads to the actors' one
    cli = [json.loads(line) for line in open(f"{out}/{k}/scores.jsonl")]
    mine = Detector.open(folder).score([json.loads(line)["text"] for line in open(texts)])
    print(json.dumps([[w["p"] for w in r["words"]] for r in cli]))
    print(json.dumps([[w["p"] for w in r["words"]] for r in mine]))
"""


@pytest.fixture(scope="module")
def minilm_online(tmp_path_factory) -> Path:
    """Online on the pretrained MiniLM (384 wide): matrices large enough that torch splits them across
    threads, as the issue's detector's were (the micro models' never are)."""
    from hades_ray.models.registry import minilm_path
    from tests.detectors import detector_folder

    return detector_folder(tmp_path_factory.mktemp("det") / "minilm", str(minilm_path()), "online", 64, seed=2)


AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}


@pytest.mark.parametrize(
    "kernels,executor",
    [
        # A process of its own whose cost is its imports (make test-fresh, run by CI after make test).
        pytest.param(AVX2, "local", marks=pytest.mark.fresh_process),
        # This CPU's own kernels (make test-slow): make test-fresh keeps the forced-AVX2 case above and make test
        # tests/api/test_score.py's in-process bit-for-bit records.
        pytest.param({}, "local", marks=pytest.mark.slow),
        # A Ray cluster started in a child process: a minute or more on two cores (make test-slow).
        pytest.param({}, "ray", marks=pytest.mark.slow),
        pytest.param(AVX2, "ray", marks=pytest.mark.slow),
    ],
)
def test_the_python_api_gives_the_commands_bits(kernels, executor, minilm_online, causal_online, tmp_path):
    from tests.api.test_score import TEXTS

    texts = tmp_path / "texts.jsonl"
    texts.write_text("".join(json.dumps({"id": f"t{k}", "text": t}) + "\n" for k, t in enumerate(TEXTS)))
    env = {**os.environ, **kernels, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    folders = f"{minilm_online},{causal_online}"
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(texts), folders, str(tmp_path / "out"), executor],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("[")]
    assert len(lines) == 4
    for cli, mine in zip(lines[::2], lines[1::2]):
        assert sum(map(len, cli)) > 10 and mine == cli  # float64 through JSON: the same bits
