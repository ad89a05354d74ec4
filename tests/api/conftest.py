"""The Python API tests' detectors: real detector folders (random heads) exported as training exports them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.detectors import detector_folder


@pytest.fixture(scope="session")
def causal_online(micro_home, tmp_path_factory) -> Path:
    """Online, on the micro GPT-2: scored a window per forward (the cached judge in the guard)."""
    return detector_folder(tmp_path_factory.mktemp("det") / "gpt2", str(micro_home / "models" / "gpt2"), "online", 160)


@pytest.fixture(scope="session")
def encoder_online(micro_home, tmp_path_factory) -> Path:
    """Online, on the micro BERT: each word's own view."""
    mlm = str(micro_home / "models" / "mlm")
    return detector_folder(tmp_path_factory.mktemp("det") / "mlm", mlm, "online", 32, seed=3)


@pytest.fixture(scope="session")
def causal_online_mean(micro_home, tmp_path_factory) -> Path:
    """``causal_online`` with a span's tokens mean-pooled, and a window that long streams outgrow."""
    gpt2 = str(micro_home / "models" / "gpt2")
    return detector_folder(tmp_path_factory.mktemp("det") / "gpt2-mean", gpt2, "online", 48, seed=5, pooling="mean")


@pytest.fixture(scope="session")
def encoder_online_mean(micro_home, tmp_path_factory) -> Path:
    """``encoder_online`` with a span's tokens mean-pooled."""
    mlm = str(micro_home / "models" / "mlm")
    return detector_folder(tmp_path_factory.mktemp("det") / "mlm-mean", mlm, "online", 32, seed=4, pooling="mean")


@pytest.fixture(scope="session")
def encoder_offline(micro_home, tmp_path_factory) -> Path:
    mlm = str(micro_home / "models" / "mlm")
    return detector_folder(tmp_path_factory.mktemp("det") / "offline", mlm, "offline", 48)


@pytest.fixture(scope="module")
def generator(micro_home):
    """The micro kit's GPT-2 and its tokenizer, as a user loads a causal LM (eval mode)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = str(micro_home / "models" / "gpt2")
    return AutoTokenizer.from_pretrained(folder), AutoModelForCausalLM.from_pretrained(folder).eval()
