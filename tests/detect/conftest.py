"""One Ray Train fit for the whole run, shared by the tests that read what it made.

``hades-ray train`` (the CLI, so its handler is on the path) with two workers and a fault injected
after the first epoch: the run that ``test_train.py`` checks for the restart and ``test_cli.py``
checks for what ``evaluate``, ``predict`` and ``score`` do with the exported detector. A fit costs
20-40 s on two cores, nearly all of it Ray Train starting and stopping its actors, so the suite
makes one here instead of one per test.
"""

from __future__ import annotations

import json

import pytest

from hades_ray.detect.synthetic import toy_instances
from hades_ray.io.hades_format import write_instances

TINY = [
    "--set",
    "detect.backbone=local:mlm",
    "--set",
    "detect.epochs=1",
    "--set",
    "detect.window=32",
    "--set",
    "detect.batch_size=16",
    "--set",
    "detect.feature_window=32",
]


@pytest.fixture(scope="session")
def detect_data(tmp_path_factory):
    """train (24), valid (8) and a test file with a bad line (3) and an unlabelled instance (7)."""
    root = tmp_path_factory.mktemp("detect_cli")
    train = write_instances(toy_instances(24, seed=1), root / "train.jsonl")
    valid = write_instances(toy_instances(8, seed=2), root / "valid.jsonl")
    test = root / "test.jsonl"
    lines = [json.dumps(i.to_json()) for i in toy_instances(6, seed=3)]
    lines.insert(2, '{"replaced": "a ===b=== c", "replaced_ids": [0, 0], "hallucination": 1}')
    unlabelled = {**toy_instances(1, seed=4)[0].to_json(), "hallucination": -1}
    test.write_text("\n".join(lines + [json.dumps(unlabelled)]) + "\n")
    return root, train, valid, test


@pytest.fixture(scope="session")
def trained_transformer(detect_data, micro_home, ray_local):
    """(detector folder, fault marker): ``hades-ray train --workers 2`` for two epochs, one worker
    raising once after epoch 0, so epoch 1 runs in the restarted worker group."""
    from hades_ray.cli import main
    from hades_ray.detect.train_loop import FAULT_ENV

    root, train, valid, _ = detect_data
    model, marker = root / "transformer", root / "fault.marker"
    args = ["train", "--train", str(train), "--valid", str(valid), "--output", str(model), "--workers", "2"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(FAULT_ENV, str(marker))
        assert main([*args, *TINY, "--set", "detect.epochs=2"]) == 0
    return model, marker
