"""The paper's learning rate for a detector backbone, by its family (``detect.lr`` = 0 asks for it)."""

from __future__ import annotations

import json
from pathlib import Path

from hades_ray.models.registry import HubModelUnavailableError, resolve_model

# HaDes (Liu et al., 2022), detector training (§5): "5e-3 for GPT2 and BERT and 1e-3 for other models".
HIGH_LR_FAMILIES = ("bert", "gpt2")
HIGH_LR, OTHER_LR = 5e-3, 1e-3


def backbone_family(reference: str) -> str:
    """The backbone's ``model_type`` (``bert``, ``gpt2``, ``roberta``...): from its ``config.json``
    when it is on disk, from the Hugging Face cache for a hub id, else guessed from the hub id's name."""
    try:
        source = resolve_model(reference)
    except HubModelUnavailableError:
        return _family_from_name(reference)  # a hub id this machine cannot load
    config_file = Path(source) / "config.json"
    if config_file.is_file():
        return str(json.loads(config_file.read_text(encoding="utf-8")).get("model_type", ""))
    try:
        from transformers import AutoConfig

        return str(AutoConfig.from_pretrained(source, trust_remote_code=False).model_type)
    except (OSError, ValueError):
        return _family_from_name(source)


def _family_from_name(hub_id: str) -> str:
    name = hub_id.rsplit("/", 1)[-1].lower()
    return next((family for family in HIGH_LR_FAMILIES if name.startswith(family)), name.split("-")[0])


def lr_for_family(family: str) -> float:
    return HIGH_LR if family in HIGH_LR_FAMILIES else OTHER_LR


def resolve_lr(config) -> float:
    """``detect.lr`` when set (> 0), else the paper's learning rate for the backbone's family."""
    d = config.detect
    if d.lr > 0:
        return d.lr
    return lr_for_family(backbone_family(d.backbone or config.models.encoder))
