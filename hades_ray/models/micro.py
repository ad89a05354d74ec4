"""Tiny random-weight models with real tokenizers, for tests: built in seconds, loaded like hub checkpoints."""

from __future__ import annotations

from pathlib import Path


def _tokenizer():
    from transformers import AutoTokenizer

    from hades_ray.models.registry import minilm_path

    return AutoTokenizer.from_pretrained(str(minilm_path()))


def build_micro_mlm(directory: str | Path, seed: int = 0) -> Path:
    """A 2-layer, 32-wide ``BertForMaskedLM`` with MiniLM's WordPiece vocabulary."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(seed)
    tokenizer = _tokenizer()
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
    )
    directory = Path(directory)
    BertForMaskedLM(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def build_micro_causal_lm(directory: str | Path, seed: int = 0) -> Path:
    """A 2-layer, 32-wide ``GPT2LMHeadModel`` sharing MiniLM's vocabulary."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    tokenizer = _tokenizer()
    config = GPT2Config(
        vocab_size=tokenizer.vocab_size,
        n_embd=32,
        n_layer=2,
        n_head=2,
        n_positions=512,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id,
    )
    directory = Path(directory)
    GPT2LMHeadModel(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def build_micro_kit(home: str | Path) -> Path:
    """Lay out ``home/models/{mlm,gpt2}`` the way ``hades-ray models build`` does."""
    models = Path(home) / "models"
    build_micro_mlm(models / "mlm")
    build_micro_causal_lm(models / "gpt2")
    return models
