"""The generator's sampling settings, and plain sampling with ``model.generate`` (the guard off).

The guard keeps the generator's own settings: the model's ``generation_config`` with sampling on and
only the values a user gives (temperature, top-k, top-p, new tokens) changed. The guarded loop builds
its logits processors from the same config with the same function ``generate`` uses, so that with
nothing flagged it draws exactly the tokens ``generate`` draws (tests/guard/test_guard.py checks this).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Sampling:
    """What a user may change; ``None`` keeps the model's own ``generation_config`` value."""

    max_new_tokens: int = 60
    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    no_end: bool = False  # never sample the end token: every prompt gets ``max_new_tokens`` tokens


def generation_config(model, tokenizer, sampling: Sampling):
    """The model's generation config with sampling on and the user's values laid over it."""
    config = copy.deepcopy(model.generation_config)
    config.do_sample = True
    config.max_new_tokens = sampling.max_new_tokens
    config.max_length = None
    for name in ("temperature", "top_k", "top_p"):
        value = getattr(sampling, name)
        if value is not None:
            setattr(config, name, value)
    if config.pad_token_id is None:
        config.pad_token_id = tokenizer.pad_token_id
    if sampling.no_end:
        # A processor that reads no history, so the guarded loop's rejected tokens cannot move it.
        config.suppress_tokens = sorted(set(config.suppress_tokens or []) | end_token_ids(config))
    # Values still unset take transformers' global defaults, as ``generate`` resolves them (top-k 50 where
    # neither the model nor the user sets one): without this the guarded loop's processors sampled from
    # another distribution than ``generate`` did under the default settings. Private, as logits_processors.
    resolved, _ = model._prepare_generation_config(config)
    resolved.max_length = None  # a default too: max_new_tokens decides
    return resolved


def prepare_tokenizer(tokenizer):
    """Left padding (a causal LM continues from the right edge) and a pad token (GPT-2 has none)."""
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    return tokenizer


def encode_prompts(tokenizer, prompts: list[str], device) -> dict[str, torch.Tensor]:
    enc = tokenizer(prompts, return_tensors="pt", padding=True)
    return {"input_ids": enc["input_ids"].to(device), "attention_mask": enc["attention_mask"].to(device)}


def logits_processors(model, config, input_ids: torch.Tensor):
    """The processors ``generate`` itself would apply for ``config`` (temperature, top-k, top-p and any
    penalties the model's config sets). A private method of transformers: one place to adapt if it moves."""
    return model._get_logits_processor(
        generation_config=config,
        input_ids_seq_length=input_ids.shape[1],
        encoder_input_ids=input_ids,
        prefix_allowed_tokens_fn=None,
        logits_processor=None,
        device=input_ids.device,
        model_kwargs={},
    )


@torch.no_grad()
def plain_generate(model, tokenizer, prompts: list[str], sampling: Sampling, seed: int) -> list[list[int]]:
    """New token ids per prompt from ``model.generate`` after ``torch.manual_seed(seed)``, unchanged."""
    config = generation_config(model, tokenizer, sampling)
    enc = encode_prompts(tokenizer, prompts, next(model.parameters()).device)
    torch.manual_seed(seed)
    out = model.generate(**enc, generation_config=config)
    new = out[:, enc["input_ids"].shape[1] :].tolist()
    return [strip_after_end(row, config) for row in new]


def end_token_ids(config) -> set[int]:
    eos = config.eos_token_id
    return set(eos if isinstance(eos, list) else [] if eos is None else [eos])


def strip_after_end(tokens: list[int], config) -> list[int]:
    """Tokens up to and including the first end token (``generate`` pads finished rows after it)."""
    ends = end_token_ids(config)
    for k, token in enumerate(tokens):
        if token in ends:
            return tokens[: k + 1]
    return tokens
