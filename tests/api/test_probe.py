"""The probe (``hades-ray train --detector probe``): an online head on the generator's own states, trained
through the span store, and its watcher on ``model.generate`` (``hades_ray/guard/probe.py``)."""

from __future__ import annotations

import json

import pytest

from hades_ray import Detector
from hades_ray.config import load_config
from hades_ray.detect.synthetic import toy_instances
from hades_ray.errors import ConfigError
from hades_ray.io.hades_format import write_instances

OVERRIDES = ["detect.backbone=local:gpt2", "detect.epochs=2", "detect.batch_size=8", "detect.lr=0.01"]


def _train(folder, *extra: str):
    from hades_ray.train import fit

    train = write_instances(toy_instances(24, seed=1), folder / "train.txt")
    valid = write_instances(toy_instances(8, seed=2), folder / "valid.txt")
    with pytest.MonkeyPatch.context() as patch:  # a head on stored vectors trains in this process: no Ray
        patch.setattr(fit, "_ray", lambda config: None)
        return fit.train_detector(load_config(overrides=[*OVERRIDES, *extra]), train, valid, folder / "probe", "probe")


@pytest.fixture(scope="module")
def probe_folder(micro_home, tmp_path_factory):
    return _train(tmp_path_factory.mktemp("probe"), "detect.layer=1")


def test_a_probe_is_a_frozen_online_span_classifier_on_the_generators_whole_context(probe_folder):
    meta = json.loads((probe_folder / "detector.json").read_text())
    assert meta["probe"] is True and meta["type"] == "transformer" and meta["backbone"] == "local:gpt2"
    assert (meta["mode"], meta["freeze"], meta["window"], meta["layer"]) == ("online", "all", 512, 1)
    summary = json.loads((probe_folder / "summary.json").read_text())
    assert summary["detector"] == "probe" and summary["span_reps"]["train"]["shards_made_now"] == 1
    det = Detector.open(probe_folder)
    assert det.is_probe and det.mode == "online"
    assert [w["word"] for w in det.score("the river was built in paris", words="all")["words"]][-1] == "paris"


def test_a_probe_needs_a_causal_backbone(micro_home, tmp_path):
    with pytest.raises(ConfigError, match="a probe reads a generator's own states"):
        _train(tmp_path, "detect.backbone=local:mlm")
