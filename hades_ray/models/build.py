"""Build the offline model kit once: ``$HADES_RAY_HOME/models/{mlm,gpt2}`` as ``save_pretrained`` folders,
each staged and put in place whole with its ``build_info.json`` (the completion marker, with its stats)
written last, so a killed build leaves nothing that looks finished; a rerun skips finished models unless forced.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict
from importlib.metadata import version
from pathlib import Path

from hades_ray.models.quality import evaluate_models
from hades_ray.models.kit import INFO_FILE, MODEL_NAMES, KitConfig, is_built, kit_config, models_root
from hades_ray.models.train_gpt2 import Gpt2TrainConfig
from hades_ray.models.train_mlm import MlmTrainConfig
from hades_ray.pipeline import storage

log = logging.getLogger(__name__)

NUM_THREADS = 2


def _train_mlm(train_texts: list[str], config: MlmTrainConfig):
    """Grow the masked LM from MiniLM and train it: (model, tokenizer, stats)."""
    import torch

    from hades_ray.models.train_mlm import encode_chunks, init_masked_lm, masked_positions_loss, mlm_batches
    from hades_ray.models.training import train_model

    torch.manual_seed(config.seed)
    tokenizer, model = init_masked_lm(config.encoder_path)
    chunks = encode_chunks(train_texts, tokenizer, config.max_length)
    return (
        model,
        tokenizer,
        train_model(model, mlm_batches(chunks, tokenizer, config), config.limits, masked_positions_loss),
    )


def _train_gpt2(train_texts: list[str], config: Gpt2TrainConfig):
    """Fit a BPE and train a small GPT-2 from scratch: (model, tokenizer, stats)."""
    from hades_ray.models.train_gpt2 import gpt2_batches, init_gpt2, token_stream, train_bpe_tokenizer
    from hades_ray.models.training import train_model

    tokenizer = train_bpe_tokenizer(train_texts, config.vocab_size, config.n_positions)
    model = init_gpt2(tokenizer, config)
    stream = token_stream(train_texts, tokenizer)
    stats = train_model(model, gpt2_batches(stream, config), config.limits)
    return model, tokenizer, stats | {"train_tokens": len(stream)}


def _build(directory: Path, train_texts: list[str], config) -> dict:
    """Train one kit model, save it with its build info (the marker, written last); returns the info."""
    started = time.perf_counter()
    train = _train_mlm if isinstance(config, MlmTrainConfig) else _train_gpt2
    model, tokenizer, stats = train(train_texts, config)
    with storage.staged_folder(directory) as staging:
        storage.save_pretrained(model, staging)
        storage.save_pretrained(tokenizer, staging)
        info = {
            "model": directory.name,
            "architecture": type(model).__name__,
            "train_texts": len(train_texts),
            **stats,
            "build_seconds": round(time.perf_counter() - started, 1),
            "seed": config.seed,
            "config": asdict(config),
            "versions": {name: version(name) for name in ("torch", "transformers", "tokenizers")},
        }
        storage.write(staging / INFO_FILE, json.dumps(info, indent=2, default=str) + "\n")
    log.info("built %s in %.0fs (%d steps)", directory, info["build_seconds"], info["steps"])
    return info


def build_models(
    names=MODEL_NAMES,
    home: str | Path | None = None,
    force: bool = False,
    config: KitConfig | None = None,
    evaluate: bool = True,
) -> dict[str, str]:
    """Build the named models that are missing (all with ``force``); evaluate if any was built."""
    import torch

    from hades_ray.models.kit import demo_split

    config = config or kit_config()
    root = models_root(home)
    todo = [n for n in names if force or not is_built(root / n)]
    outcome = {n: "skipped (already built)" for n in names if n not in todo}
    if todo:
        torch.set_num_threads(NUM_THREADS)
        train_texts, _ = demo_split(config.heldout_fraction)
        for name in todo:
            info = _build(root / name, train_texts, getattr(config, name))
            outcome[name] = f"built in {info['build_seconds']}s, {info['steps']} steps"
        if evaluate:
            evaluate_models(home, config=config)
    return outcome


def ensure_models(names=MODEL_NAMES, home: str | Path | None = None) -> list[str]:
    """Build whichever of ``names`` is missing; returns those built."""
    missing = [n for n in names if not is_built(models_root(home) / n)]
    if missing:
        build_models(missing, home)
    return missing
