"""Selection rounds: where each round's pool went (round.json's counts as stacked bars), alpha, beta,
gamma and R, and the label balance and agreement of its judgments; and POS/NER by label (Fig. 4) from
the dataset's stats.json, which ``hades-ray dataset build`` computes (hades_ray/annotate/dataset.py)."""

from __future__ import annotations

import logging
from pathlib import Path

from hades_ray.pool.rounds import simulated_rounds
from hades_ray.report import paper_text, plots
from hades_ray.report.inputs import ReportInputError, read_json, read_yaml_config, round_folders
from hades_ray.report.model import Figure, Section, Table, fmt

log = logging.getLogger(__name__)
# round.json's counts in filter order: each step's loss is the drop from the count before it.
STEPS = (
    ("unjudged", "in earlier batches"),
    ("after_thresholds", "outside the p(H) band"),
    ("after_paraphrase", "paraphrase cut"),
    ("after_swaps", "Date/Name swap dropped"),
    ("after_rebalance", "Eq. 1 subsampling"),
    ("batch", "not drawn"),
)


def flow(counts: dict) -> dict[str, int]:
    """The pool split into where its instances went: the loss at each filter, then the batch."""
    out, before = {}, counts.get("pool", 0)
    for key, lost_to in STEPS:
        now = counts.get(key, before)  # a step the round did not run (round 0 has no band) loses nothing
        out[lost_to] = max(0, before - now)
        before = now
    out["batch"] = counts.get("batch", 0)
    return out


def agreement(round_dir: Path) -> dict | None:
    """The round's agreement report (hades_ray/pool/consensus.py); None before any judgments."""
    from hades_ray.pool.labels import round_labels

    if not (round_dir / "judgments").is_dir() or not any((round_dir / "judgments").glob("import-*.csv")):
        return None
    config = read_yaml_config(round_dir / "config.resolved.yaml")
    return round_labels(config, round_dir.parent, int(round_dir.name.split("-")[1]))[1]


def round_numbers(workdir: Path) -> list[dict]:
    rounds = []
    for folder in round_folders(workdir):
        data = read_json(folder / "round.json", "a selection round's summary")
        rates, ratio = data.get("rates") or {}, data.get("ratio") or {}
        rounds.append(
            {
                "round": data.get("round", int(folder.name.split("-")[1])),
                "counts": data.get("counts", {}),
                "flow": flow(data.get("counts", {})),
                **{rate: rates.get(rate) for rate in ("alpha", "beta", "gamma")},
                "R": ratio.get("R"),
                "rates_from": rates.get("source"),
                "thresholds": data.get("thresholds"),
                "messages": data.get("messages", []),
                "agreement": agreement(folder),
            }
        )
    return rounds


def _figure(rounds: list[dict]) -> Figure:
    names = [f"round {r['round']}" for r in rounds]
    fig, axes = plots.new_figure(2, width=5.0, height=3.4)
    layers = {step: [r["flow"][step] for r in rounds] for step in rounds[0]["flow"]}
    plots.stacked_bars(axes[0], names, layers, "Where each round's pool went", "instances")
    judged = [r["agreement"] or {} for r in rounds]
    balance = {label: [(a.get("labels") or {}).get(label, 0) for a in judged] for label in ("H", "N")}
    plots.grouped_bars(axes[1], names, balance, "Consensus labels per round", "items")
    return Figure("rounds", "Selection rounds: where the instances went, and the label balance", plots.to_png(fig))


def rounds_section(workdir: Path) -> Section:
    rounds = round_numbers(workdir)
    section = Section("rounds", "Selection rounds", numbers={"rounds": rounds})
    steps = list(rounds[0]["flow"])
    section.tables.append(
        Table("Where the pool went", ["round", "pool", *steps],
              [[r["round"], r["counts"].get("pool"), *(r["flow"][s] for s in steps)] for r in rounds])
    )  # fmt: skip
    rates = [[r["round"], *(fmt(r[k]) for k in ("alpha", "beta", "gamma", "R")), r["rates_from"]] for r in rounds]
    columns = ["round", "alpha (TPR)", "beta (TNR)", "gamma (precision)", "R", "rates from"]
    section.tables.append(Table("Detector rates and Eq. 1's R", columns, rates))
    rows = []
    for r in rounds:
        a = r["agreement"] or {}
        labels = a.get("labels") or {}
        share_h = labels.get("H", 0) / max(1, labels.get("H", 0) + labels.get("N", 0)) if labels else None
        rows.append([r["round"], labels.get("H"), labels.get("N"), fmt(share_h), a.get("judged"),
                     fmt(a.get("share_consensus")), fmt(a.get("share_agreement_80")),
                     fmt(a.get("share_agreement_100")), fmt(a.get("krippendorff_alpha"))])  # fmt: skip
    section.tables.append(
        Table("Label balance and agreement", ["round", "H", "N", "H share", "judged", "consensus", ">= 80%",
                                              "100%", "Krippendorff alpha"], rows)
    )  # fmt: skip
    simulated = simulated_rounds(workdir)
    if simulated:
        names = ", ".join(f"round-{k:03d}" for k in simulated)
        section.notes.append(f"Judgments of {names} are SIMULATED (hades-ray annotations simulate).")
    section.notes += [f"round {r['round']}: {m}" for r in rounds for m in r["messages"]]
    section.figures.append(_figure(rounds))
    table, section.numbers["paper_text"] = paper_text.text_figures(
        {"early_rounds_h": early_rounds_h(rounds)}, f"our first {EARLY_ROUNDS} judged rounds: our reading of 'early'"
    )
    section.tables.append(table)
    return section


EARLY_ROUNDS = 2  # which rounds the paper's "early rounds" are it does not say: the first two judged, ours


def early_rounds_h(rounds: list[dict]) -> float | None:
    """The H share (percent) of the consensus labels of the first ``EARLY_ROUNDS`` judged rounds."""
    judged = [(r["agreement"] or {}).get("labels") or {} for r in rounds if r["agreement"]][:EARLY_ROUNDS]
    h, n = sum(j.get("H", 0) for j in judged), sum(j.get("N", 0) for j in judged)
    return 100 * h / (h + n) if h + n else None


def pos_ner_section(dataset: Path, top: int = 12) -> Section:
    """Fig. 4: H and N counts per POS tag and NER type of the original span."""
    stats = read_json(dataset / "stats.json", "the dataset statistics `hades-ray dataset build` writes")
    for key in ("pos", "ner"):
        if not isinstance(stats.get(key), dict):
            raise ReportInputError(
                f"{dataset / 'stats.json'}: no '{key}' breakdown; rebuild with `hades-ray dataset build`"
            )
    section = Section("pos_ner", "POS and NER by label", numbers={k: stats[k] for k in ("pos", "ner")})
    section.notes.append(
        f"{stats.get('instances')} dataset instances ({stats.get('H')} H, {stats.get('N')} N); "
        "tags of the original span (spaCy), from stats.json."
    )
    fig, axes = plots.new_figure(2, width=5.0, height=3.4)
    for ax, (key, title) in zip(axes, (("pos", "POS of the original span"), ("ner", "NER type of the original span"))):
        values = list(stats[key].items())[:top]
        groups = {label: [v.get(label, 0) for _, v in values] for label in ("H", "N")}
        plots.grouped_bars(ax, [str(k) for k, _ in values], groups, title, "instances")
        rows = [[k, v.get("H"), v.get("N"), fmt(v.get("share_h"))] for k, v in values]
        section.tables.append(Table(title, ["value", "H", "N", "H share"], rows))
    section.figures.append(Figure("pos_ner", "POS and NER by label (Fig. 4)", plots.to_png(fig)))
    table, section.numbers["paper_text"] = paper_text.text_figures(fig_4_figures(stats), "the dataset's stats.json")
    section.tables.append(table)
    return section


def fig_4_figures(stats: dict) -> dict[str, float | None]:
    """Our counterparts of the figures the paper's text gives for Fig. 4, in percent."""
    verbs = stats["pos"].get("VERB") or {}
    ner = stats["ner"]
    total = sum(v.get("H", 0) + v.get("N", 0) for v in ner.values())
    entities = {k: v for k, v in ner.items() if k != "none"}
    entity_total = sum(v.get("H", 0) + v.get("N", 0) for v in entities.values())
    verb_total = verbs.get("H", 0) + verbs.get("N", 0)
    none = ner.get("none") or {}
    return {
        "verbs_n": 100 * verbs.get("N", 0) / verb_total if verb_total else None,
        "spans_not_entities": 100 * (none.get("H", 0) + none.get("N", 0)) / total if total else None,
        "entities_h": 100 * sum(v.get("H", 0) for v in entities.values()) / entity_total if entity_total else None,
    }
