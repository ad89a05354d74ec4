"""``hades-ray plan``: what the perturbation job will cost on a corpus, counted on a sample of it.

The sample's model work is counted with the job's own batching code (MASK runs, the models do not);
REPLACE and RANK throughput is measured (``--measure``) or given; the plan scales the sample to the
corpus and prints device-hours, wall time and the REPLACE/RANK actor split. A sample of several
Wiki-40B languages (language folders under ``--input``) is counted language by language, each with its
own config, and what a text costs in each language is printed beside the plan (``plan/languages.py``).
"""

from __future__ import annotations

import argparse
import json

from hades_ray.cli_common import add_config_args, add_key_flag, config_from_args, number_in
from hades_ray.errors import UserError
from hades_ray.io.demo_corpus import DEMO_INPUT
from hades_ray.pipeline import storage
from hades_ray.plan.render import filtered_text, plan_text

POSITIVE_INT = number_in(int, 0, float("inf"), low_open=True)
POSITIVE_FLOAT = number_in(float, 0, float("inf"), low_open=True)
PER_DEVICE = "per second of one device (a GPU, or a CPU core)"
# The flags after the corpus's size, in the order --help lists them.
FLAGS = {
    "--limit": {"type": POSITIVE_INT, "help": "read at most N rows of the sample (of each language's, if several)"},
    "--sample": {
        "type": POSITIVE_INT,
        "metavar": "N",
        "help": "count a seeded random sample of about N rows of --input, of each language's if several "
        "(the seed is --seed / the config's seed)",
    },
    "--gpus": {
        "type": POSITIVE_INT,
        "default": 1,
        "metavar": "G",
        "help": "devices the job runs on: GPUs, or CPU cores when the throughput is one core's (default 1)",
    },
    "--measure": {
        "nargs": "?",
        "const": "configured",
        "choices": ("configured", "paper-sized"),
        "help": "measure tokens/s on this machine: with the configured models, or (paper-sized) with "
        "bert-base- and gpt2-sized random-weight models built from their configs, no download",
    },
    "--measure-seconds": {
        "type": POSITIVE_FLOAT,
        "default": 3.0,
        "help": "time budget per model stage (default 3)",
    },
    "--device": {
        "choices": ("auto", "cpu", "cuda"),
        "default": "auto",
        "help": "where to measure, and what the figures are for: auto is cuda when present, else cpu",
    },
    "--threads": {
        "type": POSITIVE_INT,
        "default": 1,
        "help": "torch threads when measuring on CPU (default 1, as the presets' actors)",
    },
    "--mlm-tokens-per-s": {
        "type": POSITIVE_FLOAT,
        "help": f"REPLACE throughput: MLM token-forwards {PER_DEVICE}",
    },
    "--lm-tokens-per-s": {
        "type": POSITIVE_FLOAT,
        "help": f"RANK throughput: causal-LM tokens scored {PER_DEVICE}",
    },
    "--prepare-docs-per-s": {
        "type": POSITIVE_FLOAT,
        "help": "MASK (spaCy) documents/s of one CPU core (default: measured on the sample)",
    },
    "--actors-per-device": {
        "type": int,
        "default": 4,
        "help": "model actors sharing one device, split between REPLACE and RANK (default 4; at least 2)",
    },
    "--lm-context": {
        "type": POSITIVE_INT,
        "help": "causal-LM input limit in tokens (default: perturb.rank.max_length capped by the model's positions)",
    },
    "--target-hours": {
        "type": POSITIVE_FLOAT,
        "default": 5.0,
        "help": "device-hours budget: the plan prints the tokens/s each stage would need to meet it (default 5)",
    },
    "--pool-instances": {
        "type": POSITIVE_INT,
        "metavar": "N",
        "help": "also plan the model-in-the-loop rounds' screening of a pool of N instances, without and "
        "with the span-representation store (detect.reuse_frozen)",
    },
    "--rounds": {
        "type": POSITIVE_INT,
        "default": 14,
        "help": "rounds of screening for --pool-instances, judged as the config's select section schedules "
        "them (default 14, the paper's)",
    },
    "--detector-instances-per-s": {
        "type": POSITIVE_FLOAT,
        "help": f"screening throughput: instances through the round detector (backbone and head) {PER_DEVICE}",
    },
    "--head-instances-per-s": {
        "type": POSITIVE_FLOAT,
        "help": f"screening throughput with the store: instances through the detector's MLP head alone {PER_DEVICE}",
    },
    "--output": {"metavar": "PLAN.json", "help": "also write the plan as JSON"},
}


def add_plan_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input",
        required=True,
        help=f"a sample of the corpus: JSONL or Parquet file or folder (as `hades-ray perturb` reads), "
        f"or '{DEMO_INPUT}' for the embedded Wikipedia leads",
    )
    size = parser.add_mutually_exclusive_group(required=True)
    size.add_argument("--corpus-docs", type=POSITIVE_INT, metavar="N", help="documents (input rows) in the corpus")
    size.add_argument(
        "--perturbed-docs",
        type=POSITIVE_INT,
        metavar="N",
        help="documents to perturb instead (the pool's size, after the filters)",
    )
    for flag, options in FLAGS.items():
        parser.add_argument(flag, **options)
    add_config_args(parser)
    # The language of files whose path names none; Wiki-40B language folders (in/de/, in/zh-cn/) and files
    # (wiki40b-ja.parquet) under --input are each counted in their own language (plan/languages.py).
    add_key_flag(parser, "language")


def run(args: argparse.Namespace) -> int:
    from hades_ray.plan.budget import make_plan, needed_throughput
    from hades_ray.plan.languages import count_languages, language_samples

    if args.actors_per_device < 2:
        raise UserError("--actors-per-device must be at least 2 (one REPLACE and one RANK actor)")
    if not args.measure and not (args.mlm_tokens_per_s and args.lm_tokens_per_s):
        raise UserError("give --measure, or both --mlm-tokens-per-s and --lm-tokens-per-s")
    if args.pool_instances and not args.measure and not (args.detector_instances_per_s and args.head_instances_per_s):
        raise UserError(
            "--pool-instances: give --measure, or both --detector-instances-per-s and --head-instances-per-s"
        )
    device = _device(args.device)
    samples = language_samples(config_from_args(args, resolve=False), args.input)
    counted = count_languages(
        samples, args.lm_context, args.limit, args.sample, keep_groups=bool(args.measure), device=device
    )
    # The model settings and tokenizers of the first language stand for all (measuring checks they agree).
    config, tokenizers = samples[0].config, counted[0].tokenizers
    counts = sum((part.counts for part in counted[1:]), counted[0].counts)
    if not counts.perturbed:
        raise UserError(f"{args.input}: no row of the sample passes the filters ({filtered_text(counts.filtered)})")
    measured = _measure(args, counted, counts, device) if args.measure else None
    throughput = _throughput(args, counts, measured, device)
    plan = make_plan(counts, throughput, args.gpus, args.corpus_docs, args.perturbed_docs, args.actors_per_device)
    result = {
        "input": str(args.input),
        "preset": config.preset,
        "models": {"mlm": config.models.mlm, "causal_lm": config.models.causal_lm},
        "lm_context": tokenizers.lm_context,
        "sample": counts.to_dict(),
    }
    if len(counted) > 1 or not counted[0].sample.language.is_default:  # English alone prints what it always printed
        result["languages"] = {part.sample.language.name: part.costs for part in counted}
    result |= {
        "measured": measured,
        "throughput": throughput.__dict__,
        "plan": plan,
        "to_fit": needed_throughput(plan, args.target_hours),
    }
    if args.pool_instances:
        result["screening"] = _screening(args, config, device)
    print(plan_text(result))
    if args.output:
        storage.write(args.output, json.dumps(result, indent=2))
    return 0


def _device(choice: str) -> str:
    import torch

    if choice == "cuda" or (choice == "auto" and torch.cuda.is_available()):
        return "cuda"
    return "cpu"


def _measure(args, counted: list, counts, device: str) -> dict:
    import torch

    from hades_ray.plan.measure import measure_stages

    config, tokenizers = counted[0].sample.config, counted[0].tokenizers
    if len({(part.sample.config.models.mlm, part.sample.config.models.causal_lm) for part in counted}) > 1:
        raise UserError(
            "--measure measures one MLM and one causal LM, and the sample's languages use different ones; "
            "plan each language on its own (--input FOLDER/LANG), or give --mlm-tokens-per-s and --lm-tokens-per-s"
        )
    if device == "cuda" and not torch.cuda.is_available():
        raise UserError("--measure on cuda needs a CUDA device; this machine has none (use --device cpu)")
    positions = tokenizers.lm_positions
    if args.measure == "configured" and positions and tokenizers.lm_context > positions:
        raise UserError(
            f"--lm-context {tokenizers.lm_context} exceeds the {positions} positions of "
            f"{config.models.causal_lm!r}; measure it with a smaller --lm-context, or use --measure paper-sized"
        )
    torch.set_num_threads(args.threads)
    return measure_stages(config, tokenizers, counts, args.measure, device, args.measure_seconds)


def _screening(args, config, device: str) -> dict:
    """The rounds' screening of ``--pool-instances``, without and with the store (plan/screening.py)."""
    from hades_ray.plan.screening import ScreeningThroughput, measure_screening, round_sizes, screening_plan

    detector, head = args.detector_instances_per_s, args.head_instances_per_s
    measured = None
    if not (detector and head):
        measured = measure_screening(config, args.measure, device, args.measure_seconds)
    source = f"measured: {measured['model']}, {measured['window_tokens']} tokens" if measured else "given"
    if measured and (detector or head):
        source += "; given: --" + ("detector" if detector else "head") + "-instances-per-s"
    throughput = ScreeningThroughput(
        detector or measured["detector_instances_per_s"], head or measured["head_instances_per_s"], source
    )
    return screening_plan(args.pool_instances, round_sizes(config.select, args.rounds), throughput, args.gpus)


def _throughput(args, counts, measured: dict | None, device: str):
    from hades_ray.plan.budget import Throughput

    mlm = args.mlm_tokens_per_s or measured["replace"]["tokens_per_s"]
    lm = args.lm_tokens_per_s or measured["rank"]["tokens_per_s"]
    prepare = args.prepare_docs_per_s or counts.read / max(counts.prepare_seconds, 1e-6)
    given = [flag for flag in ("mlm_tokens_per_s", "lm_tokens_per_s") if getattr(args, flag)]
    source = (
        f"measured: {measured['models']} models on {measured['device']}, per {measured['basis']}" if measured else ""
    )
    if given:
        source = "; ".join(filter(None, [source, "given: " + ", ".join("--" + g.replace("_", "-") for g in given)]))
    # On a CPU the figures are per CPU-second, so per core whatever --threads was.
    return Throughput(mlm, lm, prepare, source, "GPU" if device == "cuda" else "CPU core")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="count the perturbation job's work on a sample and plan device-hours for a corpus",
        description=__doc__,
    )
    add_plan_args(parser)
    parser.set_defaults(func=run)
