"""`hades-ray tune` sweeps what the paper explored: freezing the backbone or not, and the MLP's hidden size."""

import torch

from hades_ray.config import load_config
from hades_ray.detect.model import build_head
from hades_ray.train.transformer import detector_settings
from hades_ray.train.tune import apply_trial, default_space


def test_the_space_holds_freezing_or_not_and_the_mlp_hidden_size():
    space = default_space()
    assert set(space["detect.freeze"].categories) == {"all", "last_layer", "none"}
    assert 0 in space["detect.mlp_hidden"].categories and len(space["detect.mlp_hidden"].categories) > 1
    config = apply_trial(load_config().to_dict(), {"detect.mlp_hidden": 128, "detect.freeze": "none"})
    assert (config.detect.mlp_hidden, config.detect.freeze) == (128, "none")


def test_the_head_takes_its_hidden_size_and_the_description_keeps_it():
    head = build_head(32, 2, 7)
    assert [m.out_features for m in head if isinstance(m, torch.nn.Linear)] == [7, 2]
    assert [m.out_features for m in build_head(32, 3) if isinstance(m, torch.nn.Linear)] == [16, 16, 2]
    assert "mlp_hidden" not in detector_settings(load_config(), "offline")  # h/2: descriptions stay as they were
    assert detector_settings(load_config(overrides=["detect.mlp_hidden=7"]), "offline")["mlp_hidden"] == 7
