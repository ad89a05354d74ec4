"""``hades-ray generate``: sample continuations of prompts with a causal LM, optionally guarded by an
online detector that resamples each word it flags (up to ``--max-retries`` times)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hades_ray.cli_common import add_config_args, config_from_args
from hades_ray.errors import UserError
from hades_ray.guard.words import WORD_CHOICES


def add_generate_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prompts", required=True, help='JSONL file, one {"prompt": "...", "id": "..."} per line')
    parser.add_argument(
        "--output",
        required=True,
        help="output folder or URI (generations.jsonl, interventions.jsonl, quarantine.jsonl, summary.json)",
    )
    parser.add_argument(
        "--model", default=None, help="causal LM: hub id, folder or local:NAME (default: the config's models.causal_lm)"
    )
    parser.add_argument("--guard", default=None, metavar="DETECTOR", help="online detector folder: turns the guard on")
    parser.add_argument(
        "--threshold", type=float, default=None, help="flag words with p(H) >= T (default: the detector's stored one)"
    )
    parser.add_argument(
        "--max-retries", type=int, default=3, help="resamples per flagged word (0: score every word, change none)"
    )
    parser.add_argument(
        "--words", choices=WORD_CHOICES, default="content", help="judge content words only (default) or every word"
    )
    parser.add_argument("--max-new-tokens", type=int, default=60, help="tokens generated per prompt")
    parser.add_argument(
        "--no-end", action="store_true", help="never sample the end token: every generation is --max-new-tokens long"
    )
    parser.add_argument("--temperature", type=float, default=None, help="sampling temperature (default: the model's)")
    parser.add_argument("--top-k", type=int, default=None, help="top-k sampling (default: the model's)")
    parser.add_argument("--top-p", type=float, default=None, help="nucleus sampling (default: the model's)")
    parser.add_argument(
        "--dtype",
        choices=("float32", "bfloat16", "float16", "auto"),
        default="float32",
        help="generator dtype (auto: bfloat16 where the device computes it natively)",
    )
    parser.add_argument("--batch-size", type=int, default=16, help="prompts generated together (one seed per batch)")
    parser.add_argument("--shard-size", type=int, default=1000, help="prompt lines per output part file")
    parser.add_argument("--actors", type=int, default=1, help="generation actors (Ray executor)")
    parser.add_argument("--num-gpus", type=float, default=0.0, help="GPUs per generation actor (0: CPU)")
    parser.add_argument("--html", action="store_true", help="also write report.html (needs --guard)")
    parser.add_argument("--force", action="store_true", help="redo shards that are already finished")
    parser.add_argument(
        "--executor",
        choices=("ray", "local"),
        default="ray",
        help="ray: a Ray Data actor pool (local cluster or RAY_ADDRESS); local: in-process, serial",
    )
    add_config_args(parser)


def _check(args: argparse.Namespace) -> None:
    checks = [
        (args.max_new_tokens >= 1, "--max-new-tokens must be >= 1"),
        (args.max_retries >= 0, "--max-retries must be >= 0"),
        (args.batch_size >= 1 and args.shard_size >= 1, "--batch-size and --shard-size must be >= 1"),
        (args.actors >= 1 and args.num_gpus >= 0, "--actors must be >= 1 and --num-gpus >= 0"),
        (args.threshold is None or 0.0 <= args.threshold <= 1.0, "--threshold must be in [0, 1]"),
        (args.temperature is None or args.temperature > 0, "--temperature must be > 0"),
        (args.top_k is None or args.top_k >= 0, "--top-k must be >= 0"),
        (args.top_p is None or 0 < args.top_p <= 1, "--top-p must be in (0, 1]"),
        (args.guard or args.threshold is None, "--threshold needs --guard DETECTOR"),
        (args.guard or not args.html, "--html shades words by the guard's p(H): it needs --guard DETECTOR"),
    ]
    for ok, message in checks:
        if not ok:
            raise UserError(message)


def _check_detector(folder: Path) -> None:
    """A folder that is no online span classifier is one clear error before any work."""
    from hades_ray.detect.model import read_detector_json

    meta_file = folder / "detector.json"
    if meta_file.is_file():
        try:
            kind = json.loads(meta_file.read_text(encoding="utf-8")).get("type")
        except (ValueError, UnicodeDecodeError, AttributeError):
            kind = None
        if kind in ("lr", "svm"):
            raise UserError(
                f"{folder} is an {kind} detector; the guard needs an online transformer detector "
                "(hades-ray train --detector transformer --mode online)"
            )
    meta = read_detector_json(folder)
    if meta.get("mode") != "online":
        raise UserError(
            f"{folder}: the guard needs an online detector (it sees only the text before each word), but this "
            f"one was trained with mode={meta.get('mode')!r}; train one with --mode online"
        )


def run(args: argparse.Namespace) -> int:
    from hades_ray.guard.judge import stored_threshold
    from hades_ray.guard.runner import run_generate
    from hades_ray.guard.sampling import Sampling
    from hades_ray.guard.stages import GenerateJob
    from hades_ray.pipeline.stage import Resources

    _check(args)
    config = config_from_args(args)
    threshold = args.threshold
    if args.guard:
        _check_detector(Path(args.guard))
        threshold = stored_threshold(args.guard) if threshold is None else threshold
    sampling = Sampling(args.max_new_tokens, args.temperature, args.top_k, args.top_p, args.no_end)
    job = GenerateJob(
        generator=args.model or config.models.causal_lm,
        sampling=sampling,
        seed=config.seed,
        detector=str(Path(args.guard).resolve()) if args.guard else None,
        threshold=threshold,
        max_retries=args.max_retries,
        words=args.words,
        dtype=args.dtype,
    )
    resources = Resources.of_detect(config.detect, args.num_gpus, args.batch_size, max_actors=args.actors)
    summary = run_generate(
        job,
        args.prompts,
        args.output,
        resources,
        args.executor,
        args.shard_size,
        args.force,
        args.html,
        config.ray.address,
    )
    print(json.dumps(summary, indent=2))
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "generate",
        help="sample continuations of prompts, optionally guarded by an online detector",
        description=__doc__,
    )
    add_generate_args(parser)
    parser.set_defaults(func=run)
