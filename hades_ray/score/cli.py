"""``hades-ray score``: p(H) for every content word of free text, with a trained detector."""

from __future__ import annotations

import argparse
import json

from hades_ray.cli_common import (
    GPU_SHARE,
    POSITIVE_INT,
    PROBABILITY,
    add_config_args,
    add_job_args,
    add_override,
    config_from_args,
)
from hades_ray.score.settings import WORD_CHOICES


def _score(args: argparse.Namespace) -> int:
    from hades_ray.errors import UserError
    from hades_ray.pipeline.executor import Executor
    from hades_ray.score.runner import in_memory, run_score

    if (args.input is None) == (args.text is None):
        raise UserError("give --input FILE (or - for stdin) or --text TEXT, one of the two")
    config = config_from_args(args)
    executor = Executor.of(config.ray, args.executor, args.force, in_memory(args.input, args.text))
    summary = run_score(config, args.model, args.output, input=args.input, text=args.text, executor=executor)
    keys = ("scored_texts", "quarantined", "scored_words", "flagged", "flagged_share", "mean_p", "threshold")
    print(json.dumps({k: summary.get(k) for k in keys}))
    return 0


def register(subparsers) -> None:
    score = subparsers.add_parser("score", help="p(H) for every content word of free text (a trained detector)")
    score.add_argument("--model", required=True, help="detector folder written by `hades-ray train`")
    score.add_argument(
        "--input",
        default=None,
        help="texts: .jsonl ({'id', 'text'} per line), .txt (a text per line), .parquet, a folder or URI; - for stdin",
    )
    score.add_argument("--text", default=None, help="score this one text (in-process, no Ray)")
    add_job_args(
        score, "folder for scores.jsonl, quarantine.jsonl, summary.json (and report.html)", ("auto", "ray", "local")
    )
    _add_settings(score)
    add_config_args(score)
    score.set_defaults(func=_score)


def _add_settings(score: argparse.ArgumentParser) -> None:
    """The flags that set the ``score`` section (score/settings.py holds the defaults)."""
    add_override(
        score,
        "--mode",
        "score.mode",
        choices=("online", "offline"),
        help="online: a word sees only the text before it; offline: both sides (default: the detector's own mode)",
    )
    add_override(
        score,
        "--words",
        "score.words",
        choices=WORD_CHOICES,
        help="content: every word but stop words and punctuation, entities whole (default); all: every word",
    )
    add_override(
        score,
        "--threshold",
        "score.threshold",
        type=PROBABILITY,
        help="flag words with p(H) at or above this (default: the detector's threshold, chosen on validation data)",
    )
    add_override(score, "--html", "score.html", switch=True, help="also write report.html: the texts shaded by p(H)")
    add_override(
        score, "--max-chars", "score.max_chars", type=POSITIVE_INT, help="longer texts are quarantined as text_too_long"
    )
    add_override(
        score,
        "--shard-size",
        "score.shard_size",
        type=POSITIVE_INT,
        help="texts per shard (the unit a worker reads, scores and writes)",
    )
    add_override(
        score,
        "--num-gpus",
        "score.num_gpus",
        type=GPU_SHARE,
        help="GPUs per scoring actor on a cluster (0: CPU; 0.5 packs two)",
    )
    add_override(
        score,
        "--stride",
        "score.stride",
        type=POSITIVE_INT,
        help="causal online detectors, texts longer than the window: tokens between window starts (default: a "
        "quarter window; 1 gives every word exactly its training left context, at one forward per word)",
    )
