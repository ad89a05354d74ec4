"""Build the offline model kit once: ``$HADES_RAY_HOME/models/{mlm,gpt2}`` as ``save_pretrained`` folders,
each staged and put in place whole with its ``build_info.json`` (its stats) written last, so a killed build
leaves nothing that looks finished.

Each model's build is a step (``hades_ray/pipeline/steps.py``) of its folder, its digest made of the kit
settings it depends on (its training config and the held-out fraction): a rerun with the same settings
keeps a built model, one with other settings stops before any work unless ``force`` rebuilds. A model built
before the kit was a step (a ``build_info.json`` and no step marker) is kept, and recorded as this step,
when the config its ``build_info.json`` records is the current one; otherwise it too stops the build.
"""

from __future__ import annotations

import functools
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
from hades_ray.pipeline.shards import StaleShardError, read_markers
from hades_ray.pipeline.steps import Step, digest_of, must_run, run_step

log = logging.getLogger(__name__)

NUM_THREADS = 2


def _train_mlm(train_texts: list[str], config: MlmTrainConfig):
    """Grow the masked LM from MiniLM and train it: (model, tokenizer, stats)."""
    import torch

    from hades_ray.models.train_mlm import encode_chunks, init_masked_lm, masked_positions_loss, mlm_batches, warm_start
    from hades_ray.models.training import train_model

    torch.manual_seed(config.seed)
    tokenizer, model = init_masked_lm(config.encoder_path)
    chunks = encode_chunks(train_texts, tokenizer, config.max_length)
    warm_start(model, chunks, config)
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


def kit_step(folder: Path, config: KitConfig, train_texts) -> Step:
    """Building the kit model of ``folder`` (named ``mlm`` or ``gpt2``) as a step; ``train_texts()`` gives
    the texts it trains on (read only when it builds)."""
    model_config = getattr(config, folder.name)
    digest = digest_of({"config": asdict(model_config), "heldout_fraction": config.heldout_fraction})
    return Step(f"the kit's {folder.name}", str(folder), digest, lambda: _build(folder, train_texts(), model_config))


def _built_before_steps(folder: Path) -> dict | None:
    """The build info of a model built before the kit was a step (its info file, no step marker), else None."""
    if not is_built(folder) or read_markers(folder):
        return None
    return json.loads((folder / INFO_FILE).read_text(encoding="utf-8"))


def _changed(folder: Path) -> StaleShardError:
    return StaleShardError(
        f"{folder} was built with other kit settings than these; rerun with --force to rebuild it with these, "
        "or give another --home"
    )


def _plan(step: Step, model_config, force: bool) -> str:
    """``build``, ``keep`` (built with these settings) or ``adopt`` (built before the kit was a step, with
    the config its info records equal to these: kept, and recorded as this step); a model built with other
    settings stops the build, unless ``force``."""
    folder = Path(step.output)
    info = None if force else _built_before_steps(folder)
    if info is not None:
        if info.get("config") != json.loads(json.dumps(asdict(model_config), default=str)):
            raise _changed(folder)
        step.run = functools.partial(_built_before_steps, folder)
        return "adopt"
    try:
        finished = not must_run(step, force)
    except StaleShardError:
        raise _changed(folder) from None
    return "keep" if finished and is_built(folder) else "build"  # a marker beside deleted files: built again


def build_models(
    names=MODEL_NAMES,
    home: str | Path | None = None,
    force: bool = False,
    config: KitConfig | None = None,
    evaluate: bool = True,
) -> dict[str, str]:
    """Build the named models not yet built with these settings (all with ``force``); evaluate if any was
    built. Every model is checked before any builds: one built with other settings stops the build (unless
    ``force``), never kept in silence."""
    import torch

    from hades_ray.models.kit import demo_split

    config = config or kit_config()
    root = models_root(home)
    texts = functools.cache(lambda: demo_split(config.heldout_fraction)[0])
    steps = {name: kit_step(root / name, config, texts) for name in names}
    plans = {name: _plan(steps[name], getattr(config, name), force) for name in names}
    outcome = {}
    for name in names:
        if plans[name] == "build":
            torch.set_num_threads(NUM_THREADS)
            info = run_step(steps[name], force=True)  # planned above: its settings were checked there
            outcome[name] = f"built in {info['build_seconds']}s, {info['steps']} steps"
            continue
        if plans[name] == "adopt":
            run_step(steps[name])  # records the step's marker beside the model it keeps
            log.info("%s: built before the kit recorded its settings, with these settings; kept", root / name)
        outcome[name] = "skipped (already built)"
    if evaluate and "build" in plans.values():
        evaluate_models(home, config=config)
    return dict(sorted(outcome.items(), key=lambda item: plans[item[0]] == "build"))  # the skipped first


def ensure_models(names=MODEL_NAMES, home: str | Path | None = None) -> list[str]:
    """Build whichever of ``names`` is missing; returns those built."""
    missing = [n for n in names if not is_built(models_root(home) / n)]
    if missing:
        build_models(missing, home)
    return missing
