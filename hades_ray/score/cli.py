"""``hades-ray score``: p(H) for every content word of free text, with a trained detector."""

from __future__ import annotations

import argparse
import json

from hades_ray.cli_common import GPU_SHARE, POSITIVE_INT, PROBABILITY, add_config_args, config_from_args
from hades_ray.score.inputs import MAX_CHARS
from hades_ray.score.words import WORD_CHOICES


def _score(args: argparse.Namespace) -> int:
    from hades_ray.errors import UserError
    from hades_ray.score.runner import ScoreRequest, run_score

    if (args.input is None) == (args.text is None):
        raise UserError("give --input FILE (or - for stdin) or --text TEXT, one of the two")
    request = ScoreRequest(
        model=args.model,
        output=args.output,
        input=args.input,
        text=args.text,
        mode=args.mode,
        words=args.words,
        threshold=args.threshold,
        html=args.html,
        executor=args.executor,
        max_chars=args.max_chars,
        shard_size=args.shard_size,
        num_gpus=args.num_gpus,
        stride=args.stride or 0,
    )
    summary = run_score(request, config_from_args(args))
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
    score.add_argument(
        "--output", required=True, help="folder for scores.jsonl, quarantine.jsonl, summary.json (and report.html)"
    )
    score.add_argument(
        "--mode",
        choices=("online", "offline"),
        default=None,
        help="online: a word sees only the text before it; offline: both sides (default: the detector's own mode)",
    )
    score.add_argument(
        "--words",
        choices=WORD_CHOICES,
        default="content",
        help="content: every word but stop words and punctuation, entities whole (default); all: every word",
    )
    score.add_argument(
        "--threshold",
        type=PROBABILITY,
        default=None,
        help="flag words with p(H) at or above this (default: the detector's threshold, chosen on validation data)",
    )
    score.add_argument("--html", action="store_true", help="also write report.html: the texts shaded by p(H)")
    score.add_argument(
        "--executor",
        choices=("auto", "ray", "local"),
        default="auto",
        help="auto: Ray Data for files, in-process for --text and stdin",
    )
    score.add_argument(
        "--max-chars", type=POSITIVE_INT, default=MAX_CHARS, help="longer texts are quarantined as text_too_long"
    )
    score.add_argument(
        "--shard-size",
        type=POSITIVE_INT,
        default=256,
        help="texts per shard (the unit a worker reads, scores and writes)",
    )
    score.add_argument(
        "--num-gpus", type=GPU_SHARE, default=0.0, help="GPUs per scoring actor on a cluster (0: CPU; 0.5 packs two)"
    )
    score.add_argument(
        "--stride",
        type=POSITIVE_INT,
        default=None,
        help="causal online detectors, texts longer than the window: tokens between window starts (default: a "
        "quarter window; 1 gives every word exactly its training left context, at one forward per word)",
    )
    add_config_args(score)
    score.set_defaults(func=_score)
