"""The paper's figures beside ours: for each figure the paper gives (``report/paper_figures.py``), its
value, ours and the gap (ours - paper), and whose labels ours rest on (people, SIMULATED judges, or
synthetic learnability labels), so a gap measured on simulated labels is never read as the method's."""

from __future__ import annotations

from pathlib import Path

from hades_ray.report import paper_figures as paper
from hades_ray.report.inputs import parse_detector_arg, read_json, read_yaml_config, round_folders
from hades_ray.report.model import Section, Table, fmt

METRIC_NAMES = {"accuracy": "Acc", "gmean": "G-Mean", "bss": "BSS", "auc": "AUC", "n_precision": "N-P",
                "n_recall": "N-R", "n_f1": "N-F1", "h_precision": "H-P", "h_recall": "H-R", "h_f1": "H-F1"}  # fmt: skip
COLUMNS = ["figure", "ours from", "paper", "ours", "gap (ours - paper)", "our labels"]
SIMULATED = "SIMULATED judges"


def _row(figure: str, source: str, theirs: float, ours: float | None, labels: str, digits: int = 2) -> list:
    gap = None if ours is None else ours - theirs
    return [figure, source, fmt(float(theirs), digits), fmt(ours, digits), fmt(gap, digits), labels]


def judged_by(simulated: list[int], rounds: list[int]) -> str:
    """Whose labels: people, simulated judges, or both (naming the simulated rounds)."""
    if not simulated:
        return "people"
    names = ", ".join(str(k) for k in simulated)
    return SIMULATED + (f" (rounds {names})" if set(simulated) != set(rounds) else "")


# A span classifier's backbone family (its config's ``model_type``) -> the paper's row of that family.
FAMILY_ROWS = {"bert": "BERT", "roberta": "RoBERTa", "xlnet": "XLNet", "gpt2": "GPT-2"}


def detector_kinds(values: list[str]) -> dict[str, tuple[str | None, str | None, str | None]]:
    """(kind, mode, backbone family) of each ``--detector`` by name; a predictions file says none of them."""
    from hades_ray.detect.detector import Detector
    from hades_ray.train.learning_rate import backbone_family

    kinds = {}
    for value in values:
        name, path = parse_detector_arg(value)
        detector = Detector.open(path) if path.is_dir() else None
        if detector is None:
            kinds[name] = (None, None, None)
            continue
        family = backbone_family(detector.backbone) if detector.kind == "transformer" else None
        kinds[name] = (detector.kind, detector.mode, family)
    return kinds


def paper_rows(kind: str | None, mode: str | None, family: str | None = None) -> list[tuple[str, str, dict]]:
    """(table, row, the paper's figures) a detector is set beside: LR/SVM beside the paper's row of that
    name; a span classifier beside the row of its backbone's family in its mode's table (a BERT-family
    backbone, MiniLM included, beside BERT), or beside none when that table has no such row (GPT-2
    offline, DeBERTa); a predictions file, whose model is not known, beside both headline rows."""
    if kind in ("lr", "svm"):
        table, rows = paper.TABLES["offline"]
        return [(table, kind.upper(), rows[kind.upper()])] if kind.upper() in rows else []
    if kind is None:
        return [(paper.TABLES[m][0], paper.HEADLINE_ROW[m], paper.TABLES[m][1][paper.HEADLINE_ROW[m]])
                for m in paper.TABLES]  # fmt: skip
    table, rows = paper.TABLES.get(mode, paper.TABLES["offline"])
    row = FAMILY_ROWS.get(family or "")
    return [(table, row, rows[row])] if row in rows else []


def detector_table(metrics: dict[str, dict], kinds: dict, dataset_labels: str) -> Table:
    """Each detector's metrics beside the paper's row(s) for it; a folder was scored on the dataset's
    labels, a predictions file on its own."""
    rows = []
    for name, values in metrics.items():
        kind, mode, family = kinds.get(name, (None, None, None))
        labels = dataset_labels if kind else "the predictions file's own labels"
        for table, row, figures in paper_rows(kind, mode, family):
            for key, theirs in figures.items():
                ours = values.get(key)
                rows.append(_row(f"{table} {row} {METRIC_NAMES[key]}", name, theirs,
                                 None if ours is None else 100 * ours, labels))  # fmt: skip
    return Table("Detectors beside Tables 2-3 (percent; BSS lower is better)", COLUMNS, rows)


def annotation_numbers(workdir: Path) -> dict:
    """Our counterparts of the paper's annotation figures, over every judged round of ``workdir``: the
    items annotated (a first panel or more) beside its 12,719, those that reached consensus beside its
    10,954, the judgments beside its HITs, and the shares as it defines them."""
    from hades_ray.pool.consensus import agreement_report
    from hades_ray.pool.rounds import simulated_rounds
    from hades_ray.pool.labels import items_over_rounds

    folders = round_folders(workdir)
    rounds = [int(f.name.split("-")[1]) for f in folders]
    judged = [f for f in folders if any((f / "judgments").glob("import-*.csv"))]
    configs = {int(f.name.split("-")[1]): read_yaml_config(f / "config.resolved.yaml") for f in judged}
    table = items_over_rounds(configs, workdir) if configs else None
    report = agreement_report(table) if table is not None else {}
    labels = report.get("labels") or {}
    labelled = labels.get("H", 0) + labels.get("N", 0)

    def percent(value):
        return None if value is None else 100 * value

    rule = configs[max(configs)].annotate if configs else None
    return {
        "rule": rule_judgments(rule) if rule is not None else None,
        "share_consensus": percent(report.get("share_consensus")),
        "share_agreement_80": percent(report.get("share_agreement_80")),
        "share_agreement_100": percent(report.get("share_agreement_100")),
        "krippendorff_alpha": report.get("krippendorff_alpha"),
        "share_h": 100 * labels["H"] / labelled if labelled else None,
        "share_n": 100 * labels["N"] / labelled if labelled else None,
        "rounds": len(rounds),
        "annotated": report.get("judged", 0),
        "consensus": labelled,
        "hits": int(table["total"].sum()) if table is not None else 0,
        "labels": judged_by(simulated_rounds(workdir), rounds),
    }


def rule_judgments(cfg) -> dict:
    """The judgments our consensus rule (``cfg``: an ``annotate`` section) implies for the paper's 12,719
    items at its three shares, and the most any panels of that size allow (``annotate/rules.py``)."""
    from hades_ray.annotate.rules import most_judgments, rebuild_shares

    figures = {f.key: f.value for f in paper.ANNOTATION + paper.ROUNDS}
    annotated, shares = int(figures["annotated"]), [figures[k] for k in paper.SHARE_KEYS]
    result = rebuild_shares(cfg, annotated, *shares)
    return {"rule": f"{cfg.consensus_rule} (min_agree_first {cfg.min_agree_first})", "fits": result["fits"],
            "judgments": result.get("judgments"), "most": most_judgments(cfg, annotated, shares[0])}  # fmt: skip


def rule_note(rule: dict) -> str:
    """Why the judgments a rule implies differ from the paper's 71,226 HITs."""
    hits = int(next(f.value for f in paper.ROUNDS if f.key == "hits"))
    if not rule["fits"]:
        return (
            f"our consensus rule, {rule['rule']}, cannot give the paper's three agreement shares, so it implies "
            "no judgment count for them (`hades-ray annotations shares --preset paper`: one that can)"
        )
    return (f"at the paper's shares our consensus rule, {rule['rule']}, implies {rule['judgments']:,} judgments "
            f"for its 12,719 items, not its {hits:,} HITs ({hits / 12_719:.2f} per item): with 71.24% of the "
            f"items stopping at a first panel of 4, even every other item at 6 judges gives {rule['most']:,}. "
            "The paper does not say what else its HITs count (items outside the 12,719, repeated or rejected "
            "work): the difference cannot be checked here")  # fmt: skip


def annotation_table(ours: dict) -> Table:
    rows = [_row(f.label, "our rounds", f.value, ours.get(f.key), ours["labels"], 2 if f.unit else 3)
            for f in paper.ANNOTATION]  # fmt: skip
    rows += [_row(f.label, "our rounds", f.value, ours.get(f.key), ours["labels"], 0) for f in paper.ROUNDS]
    rule = ours.get("rule")
    if rule:
        hits = next(f.value for f in paper.ROUNDS if f.key == "hits")
        rows.append(_row("HITs: the judgments our rule implies at the paper's shares", f"rule {rule['rule']}",
                         hits, rule["judgments"], "the paper's shares", 0))  # fmt: skip
    return Table("Annotation beside the paper's (percent, except alpha and the counts)", COLUMNS, rows)


def dataset_labels(dataset: Path | None) -> str:
    """Whose labels the dataset's splits hold (its stats.json says which rounds were simulated)."""
    if dataset is None:
        return "not known (no --dataset)"
    stats = read_json(dataset / "stats.json", "the dataset statistics `hades-ray dataset build` writes")
    if "simulated_rounds" not in stats:
        return "not recorded (rebuild the dataset to record them)"
    return SIMULATED if stats["simulated_instances"] else "people"


def paper_section(workdir: Path | None, dataset: Path | None, detectors: list[str], metrics: dict) -> Section:
    """The comparison section; ``metrics`` are the detectors section's, by detector name."""
    section = Section("paper", "The paper's figures beside ours", numbers={"paper": paper.PAPER})
    section.notes.append(f"Paper: {paper.PAPER}. Gap = ours - paper.")
    if metrics:
        kinds = detector_kinds(detectors)
        table = detector_table(metrics, kinds, dataset_labels(dataset))
        section.tables.append(table)
        alone = [n for n, (kind, mode, family) in kinds.items() if n in metrics and not paper_rows(kind, mode, family)]
        if alone:
            section.notes.append(f"Beside no paper row (the paper's table for their mode has no row of their "
                                 f"backbone's family): {', '.join(alone)}.")  # fmt: skip
        section.numbers["detectors"] = [dict(zip(COLUMNS, row)) for row in table.rows]
    if workdir is not None:
        ours = annotation_numbers(workdir)
        section.tables.append(annotation_table(ours))
        section.numbers["annotation"] = ours
        if ours.get("rule"):
            section.notes.append(f"Note: {rule_note(ours['rule'])}.")
    if any(SIMULATED in str(row[-1]) for t in section.tables for row in t.rows):
        section.notes.append("Rows marked SIMULATED rest on simulated judges (hades-ray annotations simulate), "
                             "not people: their gap measures the simulation, not the method.")  # fmt: skip
    section.notes += [f"Note: {text}." for text in paper.inconsistencies()]
    return section
