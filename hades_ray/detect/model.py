"""The span classifier: any Hugging Face backbone, pooled over the span's subwords, then an MLP.

Saved as a plain folder: ``detector.json`` (backbone reference and head shape), ``weights.safetensors``
(the head and every backbone parameter that trained), and ``tokenizer/``. Loading rebuilds the
backbone from its reference with ``from_pretrained`` and lays the trained weights over it.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

FORMAT = "hades_ray.span_classifier/1"


def _layers(backbone: nn.Module) -> nn.ModuleList | None:
    """The stack of transformer blocks (``encoder.layer``, ``h``, ``layer``...) found by its length."""
    depth = getattr(backbone.config, "num_hidden_layers", None)
    for _, module in backbone.named_modules():
        if isinstance(module, nn.ModuleList) and len(module) == depth:
            return module
    return None


def apply_freeze(backbone: nn.Module, freeze: str) -> None:
    """``all``: nothing trains; ``last_layer``: only the last block; ``none``: everything trains."""
    for param in backbone.parameters():
        param.requires_grad = freeze == "none"
    if freeze == "last_layer":
        layers = _layers(backbone)
        if layers is None:
            raise ValueError(f"cannot find the layer stack of {type(backbone).__name__}; use detect.freeze=all")
        for param in layers[-1].parameters():
            param.requires_grad = True


def build_head(hidden: int, layers: int) -> nn.Sequential:
    """``layers`` linear maps to 2 labels; hidden size h/2 with tanh in between (the paper's 2-layer MLP)."""
    mods: list[nn.Module] = []
    width = hidden
    for _ in range(layers - 1):
        mods += [nn.Linear(width, hidden // 2), nn.Tanh()]
        width = hidden // 2
    mods.append(nn.Linear(width, 2))
    return nn.Sequential(*mods)


class SpanClassifier(nn.Module):
    def __init__(self, backbone: nn.Module, pooling: str = "max", mlp_layers: int = 2, freeze: str = "last_layer"):
        super().__init__()
        self.backbone = backbone
        self.pooling = pooling
        apply_freeze(backbone, freeze)
        self.head = build_head(int(backbone.config.hidden_size), mlp_layers)

    def forward(self, input_ids, attention_mask, span_mask):
        states = self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        mask = span_mask.unsqueeze(-1)
        if self.pooling == "mean":
            pooled = (states * mask).sum(1) / mask.sum(1).clamp(min=1)
        else:
            pooled = states.masked_fill(~mask, torch.finfo(states.dtype).min).max(1).values
        return self.head(pooled)


def trainable_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The head and the backbone parameters that train: all a checkpoint needs besides the reference."""
    model = getattr(model, "module", model)  # unwrap DDP
    names = {n for n, p in model.named_parameters() if p.requires_grad} | {
        n for n in model.state_dict() if n.startswith("head.")
    }
    return {n: t.detach().cpu().contiguous().clone() for n, t in model.state_dict().items() if n in names}


def load_tokenizer(source: str):
    """A tokenizer that can pad: causal LMs (GPT-2) have none, so their end token pads."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(source)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    return tokenizer


def load_backbone(source: str):
    """(tokenizer, bare backbone) from a resolved reference."""
    import transformers
    from transformers import AutoModel

    transformers.logging.set_verbosity_error()  # an MLM checkpoint as encoder reports its unused head
    tokenizer = load_tokenizer(source)
    backbone = AutoModel.from_pretrained(source, trust_remote_code=False)
    return tokenizer, backbone


def build_classifier(source: str, settings: dict) -> tuple:
    tokenizer, backbone = load_backbone(source)
    model = SpanClassifier(backbone, settings["pooling"], settings["mlp_layers"], settings["freeze"])
    return tokenizer, model


def export_detector(directory: str | Path, state: dict[str, torch.Tensor], settings: dict, tokenizer) -> Path:
    """Write the standard detector folder that ``evaluate``/``predict`` load."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    save_file(state, str(directory / "weights.safetensors"))
    tokenizer.save_pretrained(str(directory / "tokenizer"))
    meta = {"format": FORMAT, "type": "transformer", **settings}
    (directory / "detector.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return directory


def load_detector(directory: str | Path, device: str = "cpu"):
    """(tokenizer, model in eval mode, settings) from an exported detector folder."""
    from safetensors.torch import load_file

    from hades_ray.models.registry import resolve_model

    directory = Path(directory)
    settings = json.loads((directory / "detector.json").read_text(encoding="utf-8"))
    _, model = build_classifier(resolve_model(settings["backbone"]), settings)
    state = load_file(str(directory / "weights.safetensors"))
    unknown = set(state) - set(model.state_dict())
    if unknown:
        raise ValueError(f"{directory}: weights for unknown parameters {sorted(unknown)[:3]}")
    model.load_state_dict(state, strict=False)
    return load_tokenizer(str(directory / "tokenizer")), model.eval().to(device), settings
