"""``hades-ray annotations export | import | simulate | shares`` and ``hades-ray dataset build``."""

from __future__ import annotations

import argparse
import json

from hades_ray.cli_common import add_config_args, add_key_flag, add_round_args, add_workdir_arg, config_from_args


def _agreement_line(config, workdir, round_index: int) -> str:
    from hades_ray.pool.labels import round_labels

    report = round_labels(config, workdir, round_index)[1]
    return "agreement: " + json.dumps(report)


def _export(args) -> int:
    from hades_ray.annotate.export import export_items

    report = export_items(config_from_args(args), args.workdir, args.round, args.format)
    print(f"{report['export']}: {report['items']} items, {report['judgments_requested']} judgments requested")
    for path in report["files"]:
        print(f"  {path}")
    return 0


def _import(args) -> int:
    from hades_ray.annotate.judgments import import_judgments

    config = config_from_args(args)
    report = import_judgments(config, args.workdir, args.round, args.file, skip_bad=args.skip_bad)
    print(
        f"{report['import']}: {report['accepted']} judgments accepted, {report['quarantined']} quarantined"
        + (f" ({report['quarantine']})" if report.get("quarantine") else "")
        + (f", {report['cancelled']} cancelled annotations left out" if report.get("cancelled") else "")
    )
    print(_agreement_line(config, args.workdir, args.round))
    return 0


def _simulate(args) -> int:
    from hades_ray.annotate.simulate import simulate_judgments

    config = config_from_args(args)
    report = simulate_judgments(config, args.workdir, args.round, judges=args.judges, noise=args.noise)
    print(
        f"SIMULATED judges (not people): {report['import']}: {report['accepted']} simulated judgments, "
        f"panel of {report['judges']}, noise {report['noise']}"
    )
    print("simulated: true; " + _agreement_line(config, args.workdir, args.round))
    return 0


def _shares(args) -> int:
    from hades_ray.annotate.rules import most_judgments, rebuild_shares
    from hades_ray.report import paper_figures as paper

    cfg = config_from_args(args).annotate
    figures = {f.key: f.value for f in paper.ANNOTATION + paper.ROUNDS}
    annotated, shares = int(figures["annotated"]), [figures[k] for k in paper.SHARE_KEYS]
    result = rebuild_shares(cfg, annotated, *shares)
    print(f"rule: {cfg.consensus_rule}, judges {cfg.judges} then up to {cfg.max_judges}, "
          f"min_agree_first {cfg.min_agree_first}, min_agree_final {cfg.min_agree_final} (annotate.*)")  # fmt: skip
    for name, count in result["bands"].items():
        ends = ", ".join(f"{a}-{b}" for a, b in result["endings"].get(name, [])) or "none"
        print(f"  {name}: {count} of the paper's {annotated} items; the rule's endings there: {ends}")
    if not result["fits"]:
        print(f"does not fit the paper's shares: it cannot end in {', '.join(result['unreachable'])}")
        return 1
    for key, theirs in zip(paper.SHARE_KEYS, shares):
        print(f"  {paper.SHARE_NAMES[key]}: {result['shares'][key]:.2f}% (the paper: {theirs:.2f}%)")
    most = most_judgments(cfg, annotated, shares[0])
    print(f"judgments: {result['judgments']:,} ({result['per_item']:.3f} per item; the paper: "
          f"{int(figures['hits']):,} HITs; at most {most:,} with these panels)")  # fmt: skip
    return 0


def _build(args) -> int:
    from hades_ray.annotate.dataset import build_dataset

    stats = build_dataset(config_from_args(args), args.workdir, args.output)
    print(
        f"dataset: {stats['instances']} instances ({stats['H']} H, {stats['N']} N); "
        + ", ".join(f"{s}={v['instances']}" for s, v in stats["splits"].items())
    )
    print(f"  {args.output}/train.txt valid.txt test.txt stats.json stats.md")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    annotations = subparsers.add_parser("annotations", help="export items for judges, import judgments, simulate")
    sub = annotations.add_subparsers(dest="action", metavar="ACTION", required=True)

    parser = sub.add_parser("export", help="items still needing judgments: crowd-sourcing CSV or Label Studio")
    add_round_args(parser)
    parser.add_argument(
        "--format", choices=("csv", "label-studio"), default="csv", help="csv (default) or label-studio tasks"
    )
    add_config_args(parser)
    parser.set_defaults(func=_export)

    parser = sub.add_parser("import", help="add judgments (CSV item_id,judge_id,label or a Label Studio export)")
    add_round_args(parser)
    parser.add_argument("file", help="a judgments CSV (item_id, judge_id, label) or a Label Studio export (.json)")
    parser.add_argument("--skip-bad", action="store_true", help="quarantine bad rows with reasons instead of failing")
    add_config_args(parser)
    parser.set_defaults(func=_import)

    parser = sub.add_parser("simulate", help="SIMULATED judges for offline demos and tests")
    add_round_args(parser)
    add_key_flag(parser, "annotate.judges", read=True)
    add_key_flag(parser, "annotate.simulate_noise", "--noise", read=True)
    add_config_args(parser)
    parser.set_defaults(func=_simulate)

    parser = sub.add_parser(
        "shares", help="rebuild the paper's three agreement shares from a consensus rule, and its judgments"
    )
    add_key_flag(parser, "annotate.consensus_rule", "--rule")
    add_config_args(parser)
    parser.set_defaults(func=_shares)

    dataset = subparsers.add_parser("dataset", help="build the HaDes-format dataset from consensus judgments")
    sub = dataset.add_subparsers(dest="action", metavar="ACTION", required=True)
    parser = sub.add_parser("build", help="train/valid/test.txt split by document, with stats.json and stats.md")
    add_workdir_arg(parser)
    parser.add_argument("--output", required=True, help="folder for train/valid/test.txt and the statistics")
    add_config_args(parser)
    parser.set_defaults(func=_build)
