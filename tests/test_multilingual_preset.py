"""The multilingual preset: it loads, pins every hub model it names to a commit, differs from the paper
preset only in its models and language, and one language's override replaces one model for that language."""

from __future__ import annotations

import pytest

from hades_ray.config import ConfigError, load_config, resolve_language
from hades_ray.models.registry import model_revision
from hades_ray.models.settings import COMMIT, LOCAL_PREFIX, looks_like_path

JAPANESE_BERT = "cl-tohoku/bert-base-japanese-v3"
SHA = "607a30d783dfa663caf39e06633721c8d4cfcd7e"


def named_models(config) -> dict[str, str]:
    """Every model reference the config names, by key (empty ones fall back to models.encoder)."""
    names = {f"models.{key}": getattr(config.models, key) for key in ("mlm", "causal_lm", "encoder")}
    names["select.detector_backbone"] = config.select.detector_backbone
    names["detect.backbone"] = config.detect.backbone
    return {key: value for key, value in names.items() if value}


def test_the_preset_loads_with_multilingual_models():
    config = load_config("multilingual")
    assert config.preset == "multilingual" and config.language == "auto"
    models = config.models
    assert (models.mlm, models.causal_lm, models.encoder) == (
        "bert-base-multilingual-cased",
        "Qwen/Qwen2.5-0.5B",
        "xlm-roberta-large",
    )
    assert config.select.detector_backbone == "xlm-roberta-base"


def test_every_hub_model_it_names_is_pinned_to_a_commit():
    config = load_config("multilingual")
    named = named_models(config)
    hub = {key: ref for key, ref in named.items() if not ref.startswith(LOCAL_PREFIX) and not looks_like_path(ref)}
    assert set(hub) == {"models.mlm", "models.causal_lm", "models.encoder", "select.detector_backbone"}
    for key, reference in hub.items():
        assert COMMIT.match(config.models.revisions.get(reference, "")), f"{key}={reference} is not pinned"
        assert model_revision(reference) == config.models.revisions[reference]  # what the loaders will load
    assert set(config.models.revisions) == set(hub.values())  # no pin for a model the preset does not use


def test_it_is_the_paper_preset_but_for_models_and_language():
    paper, multilingual = load_config("paper").to_dict(), load_config("multilingual").to_dict()
    for config in (paper, multilingual):
        for key in ("preset", "language", "models"):
            config.pop(key)
        config["select"].pop("detector_backbone")
    assert multilingual == paper  # same stages, resources (so the cluster fit holds), rounds and detector


def test_a_language_override_replaces_one_model_for_that_language_only():
    overrides = [f"languages.ja.models.mlm={JAPANESE_BERT}", f"languages.ja.models.revisions.{JAPANESE_BERT}={SHA}"]
    config = load_config("multilingual", overrides=overrides)
    japanese = resolve_language(config, "wiki40b/ja/train")
    german = resolve_language(config, "wiki40b/de/train")
    assert japanese.language == "ja" and german.language == "de"
    assert japanese.models.mlm == JAPANESE_BERT and german.models.mlm == "bert-base-multilingual-cased"
    assert japanese.models.causal_lm == german.models.causal_lm == "Qwen/Qwen2.5-0.5B"
    # the override adds its pin; the preset's stay
    assert japanese.models.revisions[JAPANESE_BERT] == SHA
    assert japanese.models.revisions["xlm-roberta-large"] == config.models.revisions["xlm-roberta-large"]
    assert JAPANESE_BERT not in german.models.revisions


def test_auto_language_without_a_language_folder_says_what_to_give():
    with pytest.raises(ConfigError, match="give --language NAME"):
        resolve_language(load_config("multilingual"), "data/sample.jsonl")
