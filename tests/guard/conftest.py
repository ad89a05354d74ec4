"""The guard tests' generator: the micro kit's GPT-2, loaded once per module."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def generator(micro_home):
    import torch

    from hades_ray.guard.sampling import prepare_tokenizer
    from hades_ray.models.registry import load_causal_lm

    torch.set_num_threads(1)
    tokenizer, model = load_causal_lm("local:gpt2", "cpu")
    return prepare_tokenizer(tokenizer), model
