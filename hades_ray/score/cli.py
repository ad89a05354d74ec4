"""``hades-ray score``: p(H) for every content word of free text, with a trained detector."""

from __future__ import annotations

import argparse
import json

from hades_ray.cli_common import (
    add_config_args,
    add_detector_arg,
    add_job_args,
    add_key_flag,
    add_key_flags,
    config_from_args,
)


def _score(args: argparse.Namespace) -> int:
    from hades_ray.errors import UserError
    from hades_ray.pipeline.executor import Executor
    from hades_ray.score.runner import in_memory, run_score

    if (args.input is None) == (args.text is None):
        raise UserError("give --input FILE (or - for stdin) or --text TEXT, one of the two")
    config = config_from_args(args, resolve=False)
    executor = Executor.of(config.ray, args.executor, args.force, in_memory(args.input, args.text))
    summary = run_score(
        config, args.model, args.output, input=args.input, text=args.text, executor=executor, language=args.language
    )
    keys = ("scored_texts", "quarantined", "scored_words", "flagged", "flagged_share", "mean_p", "threshold")
    print(json.dumps({k: summary.get(k) for k in keys}))
    return 0


def register(subparsers) -> None:
    score = subparsers.add_parser("score", help="p(H) for every content word of free text (a trained detector)")
    add_detector_arg(score)
    score.add_argument(
        "--input",
        default=None,
        help="texts: .jsonl ({'id', 'text'} per line), .txt (a text per line), .parquet, a folder or URI; - for stdin",
    )
    score.add_argument("--text", default=None, help="score this one text (in-process, no Ray)")
    add_job_args(
        score, "folder for scores.jsonl, quarantine.jsonl, summary.json (and report.html)", ("auto", "ray", "local")
    )
    add_key_flags(score, "score")  # a flag for every key of the section
    # Read here, not a --set: given, it wins over the detector's language (the config's default en does not).
    add_key_flag(score, "language", read=True)
    add_config_args(score)
    score.set_defaults(func=_score)
