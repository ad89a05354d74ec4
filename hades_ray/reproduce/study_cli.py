"""``hades-ray reproduce context``, ``reproduce decoding`` and ``reproduce round-detector``: the paper's
Fig. 6, its decoding study and our comparison of the round detector's two trainings, beside
``reproduce tables`` (``reproduce/cli.py`` registers them here)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from hades_ray.cli_common import (
    add_config_args,
    add_executor_arg,
    add_force_arg,
    add_key_flag,
    add_key_flags,
    add_set_arg,
    config_from_args,
)

# Fig. 6's own defaults, as jobs/analyses.py had them: windows count words (our reading of the paper),
# two epochs per trial. They come before --set and the key flags, which win; they win over the preset.
CONTEXT_DEFAULTS = ("detect.window_unit=words", "detect.epochs=2")
ANALYSES_HELP = "folder of the analyses: the part's files and analyses.json (`make report` uses out/analyses)"


def _context(args: argparse.Namespace) -> int:
    from hades_ray.pipeline.steps import files_identity
    from hades_ray.reproduce.analyses import part_digest, run_part, write_analyses
    from hades_ray.reproduce.context import context_markdown, context_source, log_trials, run_context_sweep
    from hades_ray.reproduce.context import write_outputs

    args.overrides = [*CONTEXT_DEFAULTS, *args.overrides]
    config = config_from_args(args)
    output = Path(args.output)
    source = context_source(args.labels, args.dataset, args.pool, output)  # before any work: a bad one stops here
    read = [source / f"{s}.txt" for s in ("train", "valid", "test")] if args.labels == "judged" else []
    inputs = files_identity(*(read or [source / "summary.json"]))
    digest = part_digest(config, labels=args.labels, source=str(source.resolve()))
    folder = output / "context"
    results = run_part(
        "context length", folder, digest, lambda: run_context_sweep(config, source, folder, args.labels), inputs,
        args.force,
    )  # fmt: skip
    log_trials(results)
    files = write_outputs(results, output)
    write_analyses(output)
    print("\n".join(context_markdown(results)))
    print(f"Fig. 6: {', '.join(str(f) for f in files)}; {output / 'analyses.json'}")
    return 0


def _decoding(args: argparse.Namespace) -> int:
    from hades_ray.reproduce.analyses import part_digest, run_part, write_analyses
    from hades_ray.reproduce.decoding import decoding_markdown, run_decoding_sweep, write_outputs

    config = config_from_args(args)
    output = Path(args.output)
    folder = output / "decoding"
    results = run_part(
        "decoding study", folder, part_digest(config),
        lambda: run_decoding_sweep(config, folder, executor=args.executor, force=args.force), force=args.force,
    )  # fmt: skip
    files = write_outputs(results, output)
    write_analyses(output)
    print("\n".join(decoding_markdown(results)))
    print(f"decoding study: {', '.join(str(f) for f in files)}; {output / 'analyses.json'}")
    return 0


def _round_detector(args: argparse.Namespace) -> int:
    from hades_ray.reproduce.round_detector import compare_round_detectors, markdown

    words = ["hades-ray", "reproduce", "round-detector", "--workdir", args.workdir]
    words += ["--test-round", str(args.test_round), "--output", args.output]
    words += [w for o in args.overrides for w in ("--set", o)]
    rows = compare_round_detectors(args.workdir, args.test_round, args.output, args.overrides, shlex.join(words),
                                   args.force)  # fmt: skip
    print(markdown(rows, shlex.join(words)), end="")
    print(f"round detector comparison: {Path(args.output) / 'round_detector.json'} and .md")
    return 0


def _context_parser(commands) -> None:
    parser = commands.add_parser(
        "context",
        help="the paper's Fig. 6: span classifiers offline and online for each context window, one Ray Tune "
        "grid; writes OUTPUT/context_length.{json,md,png} and analyses.json",
        description="Fig. 6 trains the backbone of the tables grid's BERT row (hades_ray/presets/tables_<preset>"
        ".yaml: bert-large-uncased, pinned, under --preset paper; the kit's MLM under local), as the paper ran it "
        "with its BERT-large detector, unless detect.backbone is set. Its own defaults, "
        f"{', '.join(CONTEXT_DEFAULTS)}, apply over the preset and --config; its flags and --set win over them. "
        "A rerun with the same config and data reads the recorded results back.",
    )
    parser.add_argument("--dataset", help="HaDes-format folder whose judged labels Fig. 6 trains and scores on")
    parser.add_argument(
        "--labels",
        choices=("judged", "learnability"),
        default="judged",
        help="Fig. 6's labels: judged (--dataset's) or learnability (--pool's replaced spans H, untouched words N)",
    )
    parser.add_argument(
        "--pool",
        default="out/demo",
        help="perturbation output for --labels learnability (make demo; where it holds no pool, the decoding "
        "study's top-k 10 pool under --output)",
    )
    _add_analyses_output(parser)
    add_key_flag(parser, "reproduce.context_windows", flag="--windows")
    add_key_flag(parser, "detect.window_unit")
    add_key_flags(parser, "detect", "epochs")
    add_key_flag(parser, "reproduce.context_instances", flag="--max-instances")
    add_force_arg(parser, "the grid")
    add_config_args(parser)
    parser.set_defaults(func=_context)


def _decoding_parser(commands) -> None:
    parser = commands.add_parser(
        "decoding",
        help="the decoding study: greedy, top-k 5/10/50 and top-p 0.95/0.9/0.8 REPLACE on the same demo texts, "
        "an incoherence proxy and a judging round; writes OUTPUT/decoding.{json,md,png} and analyses.json",
        description="Every setting perturbs the same texts (masks from the same seed); only "
        "perturb.replace.{decoding,top_k,top_p} differ. Every replacement becomes an item of a judging round "
        "(OUTPUT/decoding/judging): `hades-ray annotations import --workdir OUTPUT/decoding/judging --round 0 "
        "FILE` brings judgments back. A rerun with the same config reads the recorded results back.",
    )
    _add_analyses_output(parser)
    add_key_flag(parser, "reproduce.decoding_texts", flag="--texts")
    add_key_flag(parser, "perturb.rank.num_candidates", flag="--candidates")
    add_executor_arg(
        parser, help="ray: each setting's perturbation on Ray Data actor pools; local: in this process, serially"
    )
    add_force_arg(parser, "the study and every setting's pool")
    add_config_args(parser)
    parser.set_defaults(func=_decoding)


def _round_detector_parser(commands) -> None:
    parser = commands.add_parser(
        "round-detector",
        help="the round detector's split and crossval trainings on the rounds before --test-round, scored on "
        "its judged items; writes OUTPUT/round_detector.{json,md}",
        description="Both detectors train with the config the test round ran with (its config.resolved.yaml), "
        "--set values on top; the labels are whatever judged the work directory (SIMULATED for make demo-loop).",
    )
    parser.add_argument("--workdir", required=True, help="a work directory with judged rounds (make demo-loop)")
    parser.add_argument("--test-round", type=int, default=2, help="train on the rounds before it, test on it")
    parser.add_argument("--output", required=True, help="folder for the trained detectors and round_detector.*")
    add_force_arg(parser, "the crossval folds")
    add_set_arg(parser, "override one value of the test round's config")
    parser.set_defaults(func=_round_detector)


def _add_analyses_output(parser: argparse.ArgumentParser) -> None:
    """``--output`` of the studies that write a part of the analyses (Fig. 6, the decoding study)."""
    parser.add_argument("--output", required=True, help=ANALYSES_HELP)


def register_studies(commands) -> None:
    """The three subcommands, on ``reproduce``'s subparsers."""
    _context_parser(commands)
    _decoding_parser(commands)
    _round_detector_parser(commands)
