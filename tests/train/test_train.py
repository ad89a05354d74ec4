"""Ray Train: two workers, one raises once after the first epoch; the group restarts from the
checkpoint and finishes; the exported detector loads and scores."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hades_ray.config import load_config
from hades_ray.detect.synthetic import toy_instances
from hades_ray.io.hades_format import write_instances

pytestmark = pytest.mark.ray


@pytest.mark.slow
def test_two_workers_resume_after_a_worker_fails(tmp_path, micro_home, ray_local, monkeypatch):
    from hades_ray.detect.detector import Detector
    from hades_ray.train.fit import train_detector
    from hades_ray.train.loop import FAULT_ENV

    train = write_instances(toy_instances(32, seed=1), tmp_path / "train.jsonl")
    valid = write_instances(toy_instances(12, seed=2), tmp_path / "valid.jsonl")
    marker = tmp_path / "fault.marker"
    monkeypatch.setenv(FAULT_ENV, str(marker))
    config = load_config(
        overrides=[
            "detect.backbone=local:mlm",
            "detect.epochs=2",
            "detect.batch_size=8",
            "detect.lr=0.01",
            "detect.window=32",
        ]
    )
    out = train_detector(config, train, valid, tmp_path / "model", workers=2)

    assert marker.exists(), "the injected fault never fired"
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics) >= {"gmean", "auc", "bss", "epoch"}
    state_files = sorted((out / "ray_train").rglob("state.json"))
    states = {json.loads(p.read_text())["epoch"]: json.loads(p.read_text()) for p in state_files}
    assert max(states) == 1 and states[1]["metrics"]["resumed"]  # epoch 1 ran in the restarted group
    assert (out / "weights.safetensors").is_file() and (out / "tokenizer").is_dir()
    p, _ = Detector.open(out).score_records([i.to_json() for i in toy_instances(4, seed=3)])
    assert p.shape == (4,) and np.all((p >= 0) & (p <= 1))
