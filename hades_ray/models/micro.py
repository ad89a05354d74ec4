"""Tiny random-weight models with real tokenizers, for tests: built in seconds, loaded like hub checkpoints.

Their weights are the same bits on every machine (``portable_init``), so what differs between two
machines' test runs is the arithmetic alone.
"""

from __future__ import annotations

import math
from pathlib import Path

from hades_ray.pipeline import storage


def portable_init(model, seed: int, std: float, only=None) -> None:
    """Draw every matrix of ``model`` (or the parameters ``only`` names) again, uniform with standard
    deviation ``std``, from integers (numpy's PCG64) scaled by a power of two. torch's ``normal_`` is
    vectorised per CPU kernel: the same seed gives other last bits without AVX2
    (``ATEN_CPU_CAPABILITY=default``, most ARM machines) than with it, and the tests' models would then
    differ from machine to machine. Vectors (LayerNorm weights, biases) keep their constant
    initialisation; an embedding's padding row stays zero."""
    import numpy as np
    import torch

    rng = np.random.default_rng(seed)
    bound = std * math.sqrt(3.0)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if param.dim() < 2 or (only is not None and name not in only):
                continue
            draws = rng.integers(0, 2**24, size=param.numel(), dtype=np.int64).astype(np.float64)
            values = (draws / 2**23 - 1.0) * bound  # exact up to the one product's rounding, everywhere
            param.copy_(torch.from_numpy(values.reshape(tuple(param.shape))).to(param.dtype))
        for module in model.modules():
            if isinstance(module, torch.nn.Embedding) and module.padding_idx is not None:
                module.weight[module.padding_idx].zero_()


def _tokenizer():
    from transformers import AutoTokenizer

    from hades_ray.models.registry import minilm_path

    return AutoTokenizer.from_pretrained(str(minilm_path()))


def build_micro_mlm(directory: str | Path, seed: int = 0, initializer_range: float = 0.02) -> Path:
    """A 2-layer, 32-wide ``BertForMaskedLM`` with MiniLM's WordPiece vocabulary. At BERT's initializer
    range (0.02) its predictions are nearly uniform over the vocabulary (every word's entropy within
    1e-5 of the uniform's); a wider range (0.1) makes them differ from word to word by about 1e-3, far
    more than two CPUs' rounding (tests/golden/jobs.py uses one for its LR detector's features)."""
    from transformers import BertConfig, BertForMaskedLM

    tokenizer = _tokenizer()
    sizes = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}
    config = BertConfig(
        vocab_size=tokenizer.vocab_size, max_position_embeddings=512, initializer_range=initializer_range, **sizes
    )
    return _save(directory, BertForMaskedLM, config, tokenizer, seed)


def build_micro_causal_lm(directory: str | Path, seed: int = 0) -> Path:
    """A 2-layer, 32-wide ``GPT2LMHeadModel`` sharing MiniLM's vocabulary."""
    from transformers import GPT2Config, GPT2LMHeadModel

    tokenizer = _tokenizer()
    sizes = {"n_embd": 32, "n_layer": 2, "n_head": 2, "n_positions": 512}
    config = GPT2Config(
        vocab_size=tokenizer.vocab_size,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id,
        **sizes,
    )
    return _save(directory, GPT2LMHeadModel, config, tokenizer, seed)


def _save(directory: str | Path, model_class, config, tokenizer, seed: int) -> Path:
    import torch

    torch.manual_seed(seed)
    model = model_class(config)
    portable_init(model, seed, config.initializer_range)
    storage.save_pretrained(model, directory)
    storage.save_pretrained(tokenizer, directory)
    return Path(directory)


def build_micro_kit(home: str | Path) -> Path:
    """Lay out ``home/models/{mlm,gpt2}`` the way ``hades-ray models build`` does."""
    models = Path(home) / "models"
    build_micro_mlm(models / "mlm")
    build_micro_causal_lm(models / "gpt2")
    return models
