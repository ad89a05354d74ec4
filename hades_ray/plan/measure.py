"""Tokens per second of REPLACE and RANK on the device at hand, measured with the job's own functions.

REPLACE runs ``fill_masks`` (forwards, bans and sampling) on the sample's real masked sequences,
length group by length group as the job does; on a CPU each sequence is cut to its first position, so
that a paper-sized model finishes a group in seconds: the forwards keep their real shapes (rows x
width), only fewer of them run. A GPU fills whole groups. RANK runs ``perplexities`` on the sample's groups. Groups are
visited in a seeded order, so a short budget still sees short and long texts.

Speed does not depend on the weights, so paper-sized models can be measured without any download:
``paper_sized_models`` builds BERT-base and GPT-2 (124M) from their configurations, random weights,
with the real models' vocabulary sizes.
"""

from __future__ import annotations

import dataclasses
import random
import resource
import time

from hades_ray.perturb import rank, replace
from hades_ray.perturb.packing import model_positions, packing_of

BERT_BASE = {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12}
BERT_BASE |= {"intermediate_size": 3072, "max_position_embeddings": 512}
GPT2_SMALL = {"vocab_size": 50257, "n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024}


def paper_sized_models(device: str, dtype):
    """(masked LM, causal LM): ``bert-base``- and ``gpt2``-sized, random weights, eval mode."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, BertConfig, GPT2Config

    torch.manual_seed(0)
    mlm = AutoModelForMaskedLM.from_config(BertConfig(**BERT_BASE))
    lm = AutoModelForCausalLM.from_config(GPT2Config(**GPT2_SMALL))
    return mlm.eval().to(device=device, dtype=dtype), lm.eval().to(device=device, dtype=dtype)


def paper_sized_generator(folder, tokenizer_source: str) -> str:
    """A GPT-2 of the paper's size (``plan.measure.GPT2_SMALL``: 12 layers, 768 wide, 1,024 positions) with
    random weights and ``tokenizer_source``'s tokenizer (its vocabulary), saved as safetensors under
    ``folder``: a generator whose cost per token is the real one's, with no hub."""
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_source)
    torch.manual_seed(0)
    ends = {"bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id}
    model = GPT2LMHeadModel(GPT2Config(**{**GPT2_SMALL, "vocab_size": len(tokenizer), **ends}))
    from hades_ray.pipeline import storage

    storage.save_pretrained(model, folder)
    storage.save_pretrained(tokenizer, folder)
    return str(folder)


def peak_memory_mib(device: str) -> dict:
    """This process's peak resident memory, and the device's peak allocation on a GPU."""
    peak = {"process_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    if device.startswith("cuda"):
        import torch

        peak["device_peak_allocated_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    return peak


def _in_vocabulary(ids: list[int], vocab_size: int) -> list[int]:
    # A tokenizer larger than the measured model's vocabulary (never the case for the paper's pairs):
    # fold its ids in, speed does not depend on which ids they are.
    return [token % vocab_size for token in ids]


def _shortened(seq: replace.MaskedSequence, steps: int | None, vocab_size: int) -> replace.MaskedSequence:
    return dataclasses.replace(
        seq,
        input_ids=_in_vocabulary(seq.input_ids, vocab_size),
        positions=seq.positions[:steps],
        original_ids=_in_vocabulary(seq.original_ids[:steps], vocab_size),
    )


def _timed(call, warm_up, groups: list, inputs, shapes, budget_s: float) -> dict:
    """Wall and process CPU seconds of ``call(inputs(group))`` over the groups in a seeded order until
    ``budget_s`` wall seconds are spent, after one untimed ``call(warm_up(first item))`` (allocation and
    kernel selection); and the token-forwards made (``shapes``: rows x width of each forward). On a shared
    CPU, tokens per CPU-second is what one core of its own would do; the wall clock counts the neighbours'
    load too."""
    order = random.Random(0).sample(range(len(groups)), len(groups))
    call([warm_up(groups[order[0]][0])])
    wall = cpu = 0.0
    tokens = calls = 0
    for index in order:
        batch = inputs(groups[index])
        wall_started, cpu_started = time.perf_counter(), time.process_time()
        call(batch)
        wall += time.perf_counter() - wall_started
        cpu += time.process_time() - cpu_started
        forwards = shapes(batch)
        tokens += sum(rows * width for rows, width in forwards)
        calls += len(forwards)
        if wall >= budget_s:
            break
    return {
        "tokens_per_wall_s": tokens / wall,
        "tokens_per_cpu_s": tokens / max(cpu, 1e-9),
        "token_forwards": tokens,
        "forward_calls": calls,
        "wall_seconds": round(wall, 3),
        "cpu_seconds": round(cpu, 3),
    }


def measure_replace(model, groups: list[list], tokenizer, bans, config, budget_s: float, steps: int | None = 1) -> dict:
    """REPLACE's tokens/s: token positions through the MLM per second of ``fill_masks``; each sequence
    cut to its first ``steps`` positions (None: all of them, as the job fills them)."""
    vocab = model.config.vocab_size
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    packing = packing_of(config, next(model.parameters()).device.type, model_positions(model))
    return _timed(
        lambda sequences: replace.fill_masks(model, sequences, config, bans, pad),
        lambda seq: _shortened(seq, 1, vocab),
        groups,
        lambda group: [_shortened(seq, steps, vocab) for seq in group],
        lambda sequences: replace.forward_shapes(sequences, bans, packing),  # as fill_masks packs them
        budget_s,
    )


def measure_rank(model, groups: list[list[list[int]]], pad_id: int, config, budget_s: float) -> dict:
    """RANK's tokens/s: candidate tokens scored per second of ``perplexities`` wall time, packed as
    ``config`` (``perturb.rank``) says."""
    vocab = model.config.vocab_size
    packing = packing_of(config, next(model.parameters()).device.type, model_positions(model))
    return _timed(
        lambda sequences: rank.perplexities(model, sequences, pad_id, config),
        lambda ids: _in_vocabulary(ids, vocab),
        groups,
        lambda group: [_in_vocabulary(ids, vocab) for ids in group],
        lambda sequences: rank.forward_shapes([len(ids) for ids in sequences], packing),
        budget_s,
    )


def measure_stages(config, tokenizers, counts, models: str, device: str, budget_s: float, watch=None) -> dict:
    """Both model stages' tokens/s with ``models`` ("configured" or "paper-sized") on ``device``;
    ``counts`` must come from ``count_sample(..., keep_groups=True)``. ``watch(mlm, lm)``, if given,
    sees the models before they run (jobs/device_check.py times their forwards)."""
    from hades_ray.models.registry import load_causal_lm, load_masked_lm, resolve_dtype
    from hades_ray.text.stopwords import stop_words

    perturb = config.perturb
    mlm_dtype, lm_dtype = resolve_dtype(perturb.replace.dtype, device), resolve_dtype(perturb.rank.dtype, device)
    if models == "paper-sized":
        mlm, lm = paper_sized_models(device, mlm_dtype)
        lm = lm.to(dtype=lm_dtype)
        names = {"mlm": "bert-base-sized (random weights)", "causal_lm": "gpt2-sized (random weights)"}
    else:
        mlm = load_masked_lm(config.models.mlm, device, perturb.replace.dtype)[1]
        lm = load_causal_lm(config.models.causal_lm, device, perturb.rank.dtype)[1]
        names = {"mlm": config.models.mlm, "causal_lm": config.models.causal_lm}
    if watch:
        watch(mlm, lm)
    stops = None if perturb.replace.allow_stopwords else stop_words(perturb.mask.stopwords, config.lang)
    bans = replace.vocabulary_bans(tokenizers.mlm, mlm.config.vocab_size, stops, perturb.replace.whole_words)
    lm_pad = tokenizers.lm.pad_token_id if tokenizers.lm.pad_token_id is not None else tokenizers.lm.eos_token_id
    # A GPU fills whole groups within the budget, as the job does; a CPU only their first step.
    steps = None if device.startswith("cuda") else 1
    replace_figures = measure_replace(mlm, counts.mlm_groups, tokenizers.mlm, bans, perturb.replace, budget_s, steps)
    replace_figures |= peak_memory_mib(device)
    rank_figures = measure_rank(lm, counts.lm_groups, lm_pad or 0, perturb.rank, budget_s) | peak_memory_mib(device)
    # A GPU's throughput is its wall clock; a CPU's, its CPU time (one torch thread: one core's own speed).
    basis = "wall" if device.startswith("cuda") else "cpu"
    for figures in (replace_figures, rank_figures):
        figures["tokens_per_s"] = figures[f"tokens_per_{basis}_s"]
    return {
        "basis": "wall time" if basis == "wall" else "process CPU time (neighbours' load excluded)",
        "models": models,
        "device": device_name(device),
        "replace": {"model": names["mlm"], "dtype": str(mlm_dtype).removeprefix("torch."), **replace_figures},
        "rank": {"model": names["causal_lm"], "dtype": str(lm_dtype).removeprefix("torch."), **rank_figures},
    }


def device_name(device: str) -> str:
    """The device in words, with the torch threads a CPU measurement used."""
    import platform

    import torch

    if device.startswith("cuda"):
        return torch.cuda.get_device_name(device)
    return f"CPU {platform.machine()}, {torch.get_num_threads()} torch thread(s)"
