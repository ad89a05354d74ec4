"""The span classifier: any Hugging Face backbone, pooled over the span's subwords, then an MLP.

Saved as a plain folder: ``detector.json`` (backbone reference and head shape), ``weights.safetensors``
(the head and every backbone parameter that trained), and ``tokenizer/``. Loading rebuilds the
backbone from its reference (at its pinned revision) with ``from_pretrained`` and lays the trained
weights over it; the weights must hold exactly the parameters that trained, no more and no fewer.
An export stages the tokenizer and the weights first, removes ``detector.json``, renames them into place
and writes ``detector.json`` last, so a reader never finds new weights under an old description, or
half a file; a failed export before that leaves the old detector as it was.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from hades_ray.detect.description import DETECTOR_JSON, SPAN_FORMAT, write_description
from hades_ray.pipeline import storage

WEIGHTS, TOKENIZER = "weights.safetensors", "tokenizer"


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


def select_layer(backbone: nn.Module, layer: int = -1) -> nn.Module:
    """Make ``backbone``'s ``last_hidden_state`` its ``hidden_states[layer]`` (``detect.layer``; -1, the last,
    leaves it as it is). Hooks rather than a wrapper keep the backbone's parameter names (a checkpoint's
    keys) and every caller's forward as they are: a windowed forward, a cached one, a training one."""
    if layer == -1:
        return backbone
    depth = int(backbone.config.num_hidden_layers)
    if not -depth - 1 <= layer <= depth:
        raise ValueError(f"detect.layer={layer}: {type(backbone).__name__} has hidden states 0..{depth} (or -1)")

    def ask(module, args, kwargs):
        return args, {**kwargs, "output_hidden_states": True}

    def take(module, args, kwargs, out):
        out.last_hidden_state = out.hidden_states[layer]
        return out

    backbone.register_forward_pre_hook(ask, with_kwargs=True)
    backbone.register_forward_hook(take, with_kwargs=True)
    backbone.hades_layer = layer
    return backbone


def build_head(hidden: int, layers: int, inner: int = 0) -> nn.Sequential:
    """``layers`` linear maps to 2 labels with tanh in between (the paper's MLP with tanh, §4, of 2 layers,
    §5); the hidden size is ``inner``, or h/2 (§5) when it is 0."""
    mods: list[nn.Module] = []
    width, inner = hidden, inner or hidden // 2
    for _ in range(layers - 1):
        mods += [nn.Linear(width, inner), nn.Tanh()]
        width = inner
    mods.append(nn.Linear(width, 2))
    return nn.Sequential(*mods)


class SpanClassifier(nn.Module):
    def __init__(
        self, backbone: nn.Module, pooling: str = "max", mlp_layers: int = 2, freeze: str = "last_layer", mlp_hidden=0
    ):
        super().__init__()
        self.backbone = backbone
        self.pooling = pooling
        apply_freeze(backbone, freeze)
        self.head = build_head(int(backbone.config.hidden_size), mlp_layers, mlp_hidden)

    def forward(self, input_ids, attention_mask, span_mask):
        from hades_ray.detect.stable import pool_span

        states = self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return self.head(pool_span(states, span_mask, self.pooling))


class SpanHead(nn.Module):
    """The span classifier's head alone, trained on stored span vectors (``hades_ray/detect/reps.py``): its
    state is the ``head.*`` a ``SpanClassifier`` with ``freeze: all`` saves, so it exports the same folder."""

    def __init__(self, hidden: int, mlp_layers: int = 2, mlp_hidden: int = 0):
        super().__init__()
        self.head = build_head(hidden, mlp_layers, mlp_hidden)

    def forward(self, reps):
        return self.head(reps)


def trainable_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The head and the backbone parameters that train: all a checkpoint needs besides the reference."""
    model = getattr(model, "module", model)  # unwrap DDP
    names = {n for n, p in model.named_parameters() if p.requires_grad} | {
        n for n in model.state_dict() if n.startswith("head.")
    }
    return {n: t.detach().cpu().contiguous().clone() for n, t in model.state_dict().items() if n in names}


def load_tokenizer(source: str, revision: str | None = None):
    """A tokenizer that can pad: causal LMs (GPT-2) have none, so their end token pads."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(source, revision=revision)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    return tokenizer


def load_backbone(source: str, revision: str | None = None, layer: int = -1):
    """(tokenizer, bare backbone) from a resolved reference, at ``revision`` for a hub id, its spans pooled
    from ``hidden_states[layer]`` (``select_layer``)."""
    import transformers
    from transformers import AutoModel

    transformers.logging.set_verbosity_error()  # an MLM checkpoint as encoder reports its unused head
    tokenizer = load_tokenizer(source, revision)
    backbone = AutoModel.from_pretrained(source, revision=revision, trust_remote_code=False)
    return tokenizer, select_layer(backbone, layer)


def build_classifier(source: str, settings: dict) -> tuple:
    tokenizer, backbone = load_backbone(source, settings.get("revision"), int(settings.get("layer", -1)))
    model = SpanClassifier(
        backbone, settings["pooling"], settings["mlp_layers"], settings["freeze"], settings.get("mlp_hidden", 0)
    )
    return tokenizer, model


def export_detector(directory: str | Path, state: dict[str, torch.Tensor], settings: dict, tokenizer) -> Path:
    """Write the standard detector folder that ``evaluate``/``predict`` load: staged, then renamed in."""
    directory = Path(directory)
    with storage.staged_folder(directory / TOKENIZER) as stage:
        storage.save_pretrained(tokenizer, stage)
        storage.save_safetensors(state, directory / WEIGHTS)
        # Without detector.json the folder is no detector, so nothing reads it until the new one lands.
        storage.delete(directory / DETECTOR_JSON)
    write_description(directory, {"format": SPAN_FORMAT, "type": "transformer", **settings})
    return directory


def check_state(model: nn.Module, state: dict[str, torch.Tensor], where: Path) -> None:
    """The weights must be exactly the parameters that train (per ``freeze``), each of the right shape."""
    from hades_ray.models.registry import CheckpointError

    expected = trainable_state(model)
    missing, unknown = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
    if missing or unknown:
        raise CheckpointError(
            f"{where}: weights do not match the detector: missing {missing[:3]}, unexpected {unknown[:3]}"
            f" ({len(missing)} missing, {len(unknown)} unexpected)"
        )
    wrong = [n for n in expected if tuple(state[n].shape) != tuple(expected[n].shape)]
    if wrong:
        raise CheckpointError(
            f"{where}: parameter {wrong[0]!r} has shape {tuple(state[wrong[0]].shape)}, "
            f"expected {tuple(expected[wrong[0]].shape)}"
        )


def _read_weights(directory: str | Path) -> tuple[Path, dict[str, torch.Tensor]]:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from hades_ray.models.registry import CheckpointError, ModelNotFoundError

    weights = Path(directory) / WEIGHTS
    if not weights.is_file():
        raise ModelNotFoundError(f"{directory}: no {WEIGHTS}")
    try:
        return weights, load_file(str(weights))
    except (SafetensorError, OSError, ValueError) as error:
        raise CheckpointError(f"{weights}: not readable safetensors ({error})") from None


def load_head(directory: str | Path, settings: dict) -> nn.Sequential:
    """The head of a span classifier whose backbone is frozen whole (``freeze: all``), in eval mode, without
    loading the backbone: what scores stored span vectors (``hades_ray/detect/reps.py``)."""
    from hades_ray.models.registry import CheckpointError

    weights, state = _read_weights(directory)
    other = sorted(n for n in state if not n.startswith("head."))
    if settings.get("freeze") != "all" or other:
        raise CheckpointError(f"{weights}: the backbone trained ({other[:1] or settings.get('freeze')}); "
                              "only a detector with freeze: all scores stored span vectors")  # fmt: skip
    first = state.get("head.0.weight")
    if first is None:
        raise CheckpointError(f"{weights}: no head.0.weight; not a span classifier's weights")
    head = build_head(int(first.shape[1]), settings["mlp_layers"], settings.get("mlp_hidden", 0))
    try:
        head.load_state_dict({n.removeprefix("head."): t for n, t in state.items()})
    except RuntimeError as error:
        raise CheckpointError(f"{weights}: the head does not match detector.json ({error})") from None
    return head.eval()


def load_classifier(directory: str | Path, settings: dict, device: str = "cpu"):
    """(tokenizer, model in eval mode) of the span classifier in ``directory``, described by ``settings``
    (its ``detector.json``, read once by ``Detector.open``); every weight is checked."""
    from hades_ray.models.registry import resolve_model

    weights, state = _read_weights(directory)
    _, model = build_classifier(resolve_model(settings["backbone"]), settings)
    check_state(model, state, weights)
    model.load_state_dict(state, strict=False)  # strict would also demand the frozen backbone's keys
    return load_tokenizer(str(Path(directory) / TOKENIZER)), model.eval().to(device)
