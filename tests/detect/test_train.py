"""Ray Train: two workers, one raises once after the first epoch; the group restarts from the
checkpoint and finishes; the exported detector loads and scores. The fit is the session's one
(``trained_transformer`` in conftest.py: ``hades-ray train --workers 2``), which test_cli.py reads too."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hades_ray.detect.synthetic import toy_instances

pytestmark = pytest.mark.ray


def test_two_workers_resume_after_a_worker_fails(trained_transformer):
    from hades_ray.detect.api import score_records

    out, marker = trained_transformer
    assert marker.exists(), "the injected fault never fired"
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics) >= {"gmean", "auc", "bss", "epoch"}
    state_files = sorted((out / "ray_train").rglob("state.json"))
    states = {json.loads(p.read_text())["epoch"]: json.loads(p.read_text()) for p in state_files}
    assert max(states) == 1 and states[1]["metrics"]["resumed"]  # epoch 1 ran in the restarted group
    assert not states[0]["metrics"]["resumed"]  # and epoch 0 in the first one
    summary = json.loads((out / "summary.json").read_text())
    assert summary["workers"] == 2
    assert (out / "weights.safetensors").is_file() and (out / "tokenizer").is_dir()
    p = score_records(out, [i.to_json() for i in toy_instances(4, seed=3)])
    assert p.shape == (4,) and np.all((p >= 0) & (p <= 1))
