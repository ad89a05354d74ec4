"""The learning rate a detector actually trains with: the paper's rate by backbone family when unset."""

from hades_ray.config import load_config
from hades_ray.train.transformer import loop_config
from hades_ray.io.hades_format import parse_instance

RECORD = {"replaced": "a ===b=== c", "replaced_ids": [1, 1], "hallucination": 1}


def test_training_uses_the_resolved_rate_not_zero(micro_home):
    config = load_config("paper", overrides=["detect.backbone=local:mlm"])  # a BERT: the paper's 5e-3
    assert config.detect.lr == 0.0
    items = [parse_instance(RECORD), parse_instance({**RECORD, "hallucination": 0})]
    assert loop_config(config, items, items, "offline")["lr"] == 5e-3
