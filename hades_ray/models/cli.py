"""``hades-ray models build | status | evaluate``: the offline model kit."""

from __future__ import annotations

import argparse
import json

from hades_ray.cli_common import add_force_arg, add_key_flag
from hades_ray.config import HadesConfig
from hades_ray.models.build import build_models
from hades_ray.models.quality import QUALITY_FILE, evaluate_models
from hades_ray.models.kit import MODEL_NAMES, kit_config, model_status, models_root


def register(subparsers) -> None:
    parser = subparsers.add_parser("models", help="build, inspect and evaluate the offline model kit")
    commands = parser.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    build = commands.add_parser(
        "build", help="train the missing kit models for fixed steps (about 10 minutes on 2 quiet cores)"
    )
    _add_common(build)
    add_force_arg(build, "models that are already built")
    build.add_argument("--only", choices=MODEL_NAMES, action="append", help="build only this model (repeatable)")
    box = "time box in minutes, cutting the steps short on a slow machine (the kit is then not reproducible)"
    build.add_argument("--mlm-minutes", type=float, default=None, help=f"MLM {box}; default and 0: none")
    build.add_argument("--gpt2-minutes", type=float, default=None, help=f"GPT-2 {box}; default and 0: none")
    defaults = kit_config()
    for name, label in (("mlm", "MLM"), ("gpt2", "GPT-2")):
        steps = getattr(defaults, name).limits.max_steps
        build.add_argument(f"--{name}-steps", type=int, help=f"{label} training steps (default {steps})")
    build.add_argument("--no-evaluate", action="store_true", help="skip the held-out quality report")
    build.set_defaults(func=run_build)
    status = commands.add_parser("status", help="show which kit models are built and where")
    _add_common(status)
    status.set_defaults(func=run_status)
    evaluate = commands.add_parser("evaluate", help="recompute models/quality.json on held-out leads")
    _add_common(evaluate)
    evaluate.add_argument("--no-baseline", action="store_true", help="skip the untrained-head MiniLM baseline")
    evaluate.set_defaults(func=run_evaluate)


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--home", default=None, help="kit home (default: $HADES_RAY_HOME or ~/.cache/hades_ray)")
    add_key_flag(parser, "seed", read=True)


def _seed(args: argparse.Namespace) -> int:
    """The one --seed flag reads as the config's seed, whose default applies where it is not given."""
    return HadesConfig().seed if args.seed is None else args.seed


def _paper_models() -> dict[str, str]:
    """The kit model names -> the paper preset's models in their roles, measured beside the kit's."""
    from hades_ray.config import load_config

    paper = load_config("paper").models
    return {"mlm": paper.mlm, "gpt2": paper.causal_lm}


def run_build(args: argparse.Namespace) -> int:
    config = kit_config(_seed(args), args.mlm_minutes, args.gpt2_minutes, args.mlm_steps, args.gpt2_steps)
    config.paper_models = _paper_models()
    outcome = build_models(
        tuple(args.only or MODEL_NAMES), args.home, args.force, config, evaluate=not args.no_evaluate
    )
    for name, what in outcome.items():
        print(f"{name:5s} {what}")
    _print_quality(args.home)
    return 0


def run_status(args: argparse.Namespace) -> int:
    for name, entry in model_status(args.home).items():
        info = entry["info"] or {}
        detail = f"{info.get('steps')} steps, {info.get('build_seconds')}s" if entry["built"] else "not built"
        print(f"{name:5s} {'built' if entry['built'] else 'MISSING':8s} {entry['path']}  ({detail})")
    _print_quality(args.home)
    return 0


def run_evaluate(args: argparse.Namespace) -> int:
    config = kit_config(_seed(args))
    config.baseline = not args.no_baseline
    config.paper_models = _paper_models()
    evaluate_models(args.home, config=config)
    _print_quality(args.home)
    return 0


def _mlm_figures(mlm: dict) -> str:
    top1 = mlm.get("top1")  # reports written before top-1 was measured hold top-10 alone
    return (f"{top1} / " if top1 is not None else "") + f"{mlm['top10']} (n={mlm['n']})"


def _gpt2_rows(model: str, gpt2: dict, swapped: int) -> list[tuple[str, str, str]]:
    words = "1-word" if swapped == 1 else f"{swapped}-words"
    rows = []
    if gpt2.get("heldout_perplexity") is not None:
        rows.append((model, "held-out perplexity (leads as one corpus)",
                     f"{gpt2['heldout_perplexity']} (n={gpt2['heldout_leads']} leads)"))  # fmt: skip
    rows.append((model, f"original < {words}-swapped perplexity", f"{gpt2['pairwise_accuracy']} (n={gpt2['n']})"))
    rows.append((model, "median perplexity original / swapped",
                 f"{gpt2['median_ppl_original']} / {gpt2['median_ppl_swapped']}"))  # fmt: skip
    return rows


def quality_rows(report: dict) -> list[tuple[str, str, str]]:
    """(model, metric, value) rows of a quality report, for printing: the kit's models, then the paper's."""
    rows = []
    swapped = report.get("swapped_words", 3)  # reports before it was recorded swapped three
    recovery = "top-1 / top-10 recovery, masked content word"
    mlm = report.get("mlm")
    if mlm:
        rows.append(("mlm", recovery if mlm.get("top1") is not None else "top-10 recovery", _mlm_figures(mlm)))
        base = mlm.get("baseline_untrained_head")
        if base:
            rows.append(("minilm", "same, untrained MLM head (baseline)", _mlm_figures(base)))
    gpt2 = report.get("gpt2")
    if gpt2:
        rows += _gpt2_rows("gpt2", gpt2, swapped)
    for name, paper in (report.get("paper_models") or {}).items():
        if not paper["measured"]:
            rows.append((paper["model"], "the same measures", paper["why"]))
        elif name == "mlm":
            rows.append((paper["model"], recovery, _mlm_figures(paper)))
        else:
            rows += _gpt2_rows(paper["model"], paper, swapped)
    return rows


def _print_quality(home) -> None:
    path = models_root(home) / QUALITY_FILE
    if not path.is_file():
        return
    print(f"\nheld-out quality ({path}):")
    for model, metric, value in quality_rows(json.loads(path.read_text())):
        print(f"  {model:15s} {metric:44s} {value}")
