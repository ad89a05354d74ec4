"""Every figure the HaDes paper (Liu et al., ACL 2022) reports, kept in this one place, as printed.

The report (``hades_ray/report/paper.py``) and ``hades-ray reproduce tables`` set ours beside them.
Values are in percent except Krippendorff's alpha, Table 1's word statistics and the counts. A cell the
paper prints as "–" is absent from its row, never zero.

Tables 2 (offline) and 3 (online) use the metric keys of ``hades_ray.metrics.binary_metrics``: accuracy,
gmean, bss, auc, then P/R/F1 of the not-hallucination (n_) and the hallucination (h_) class. The paper's
Sec. 5 names the detectors of Tables 2-3: "BERT-large (335M), GPT2-medium (345M), XLNet-large (340M),
RoBERTa-large (355M)" (``presets/tables_paper.yaml`` pins those backbones). "BERT-base" is REPLACE's model
and "GPT-2 (117M)" RANK's (Sec. 3.2); "a RoBERTa model (without fine-tuning)" is the paraphrase encoder and
the round detector is "initiated with BERT" (Sec. 3.3), its size not given. Cased or uncased is never
stated: that choice is ours (the presets and the README's deviations).

``inconsistencies()`` checks every relation between the printed figures that can be derived, and names
each cell that does not follow from the others.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hades_ray.report import paper_table_4

PAPER = (
    "Liu et al., A Token-level Reference-free Hallucination Detection Benchmark for Free-form Text Generation, ACL 2022"
)

METRIC_KEYS = ("accuracy", "gmean", "bss", "auc", "n_precision", "n_recall", "n_f1", "h_precision", "h_recall", "h_f1")


def _row(*values: float | None) -> dict[str, float]:
    return {key: value for key, value in zip(METRIC_KEYS, values, strict=True) if value is not None}


# Table 2 (offline: the detector reads the context on both sides of the span), row -> metric -> value.
TABLE_2_OFFLINE: dict[str, dict[str, float]] = {
    "LR": _row(62.25, 60.77, None, None, 62.35, 72.08, 66.86, 62.10, 51.24, 60.33),
    "SVM": _row(63.67, 61.50, None, None, 62.89, 76.18, 68.90, 65.05, 49.65, 56.31),
    "BERT": _row(71.92, 71.95, 19.06, 78.63, 74.46, 71.29, 72.84, 69.31, 72.61, 70.92),
    "RoBERTa": _row(72.83, 70.94, 18.78, 78.72, 74.06, 74.76, 74.41, 71.43, 70.67, 71.05),
    "XLNet": _row(72.33, 71.39, 18.79, 78.93, 71.15, 80.13, 75.37, 74.07, 63.60, 68.44),
}
# Table 3 (online: only the span and what precedes it). "The transformer with causal attention (GPT-2)
# can only fit in the online setting" (§5).
TABLE_3_ONLINE: dict[str, dict[str, float]] = {
    "GPT-2": _row(71.58, 70.98, 19.13, 77.71, 71.32, 77.29, 74.19, 71.93, 65.19, 68.40),
    "BERT": _row(71.00, 70.43, 18.66, 78.83, 70.91, 76.50, 73.60, 71.12, 64.84, 67.84),
    "RoBERTa": _row(70.67, 70.14, 19.77, 77.07, 70.74, 75.87, 73.22, 70.58, 64.84, 67.59),
    "XLNet": _row(70.08, 69.17, 19.76, 76.59, 69.39, 77.60, 73.27, 71.08, 61.66, 66.04),
}
TABLES = {"offline": ("Table 2", TABLE_2_OFFLINE), "online": ("Table 3", TABLE_3_ONLINE)}
# The row each of our modes is set beside in the report: the paper's headline detector of that table.
HEADLINE_ROW = {"offline": "BERT", "online": "GPT-2"}


@dataclass(frozen=True)
class Figure:
    """One figure of the paper's text: what it measures, its value and its unit ("%" or "")."""

    key: str
    label: str
    value: float
    unit: str = "%"


# Table 1: mean (standard deviation) of each span feature per label. The word probability is printed
# in units of 1e-8; here it is in plain probability.
TABLE_1: dict[str, dict[str, tuple[float, float]]] = {
    "mlm_prob": {"H": (5.85e-8, 25.6e-8), "N": (1.30e-8, 7.67e-8)},
    "mlm_entropy": {"H": (2.58, 1.49), "N": (1.78, 1.07)},
    "tfidf": {"H": (0.021, 0.019), "N": (0.019, 0.014)},
    "ppmi": {"H": (0.198, 0.134), "N": (0.216, 0.129)},
}

# Table 1B: the correlation of the label with each feature. The paper gives it as a heatmap, a figure the
# text holds by its caption only ("(B) Feature correlation heatmap between hallucination label and word
# probability, entropy, TF-TDF and PPMI"), so no number of it is printed to hold: the report prints ours
# beside "not held".
TABLE_1B: dict[str, float | None] = {name: None for name in TABLE_1}

# Table 4 (Appendix A): Table 1's features per POS and NER tag, all 144 printed figures, and the checks
# they allow (``paper_table_4``). tag row -> feature -> label -> (mean, std).
TABLE_4, TABLE_4_PRINTED, TABLE_4_ROWS = paper_table_4.TABLE_4, paper_table_4.TABLE_4_PRINTED, paper_table_4.ROWS


@dataclass(frozen=True)
class TextFigure:
    """A figure the paper's text gives in words: its words, the value they mean, and how ours is compared
    (``about``: within ``tolerance`` points; ``over``: above it)."""

    key: str
    label: str
    words: str
    value: float
    compare: str = "about"
    tolerance: float = 5.0
    unit: str = "%"


# The figures the text gives for Fig. 4, the early rounds and the pool, in the words the project holds
# (Fig. 4's in §3.4, the early rounds' and the pool's in §3.3). Ours are computed where their data is
# (report/paper_text.py).
TEXT_FIGURES = (
    TextFigure("verbs_n", "N share of verb spans (Fig. 4)", "about two-thirds of verbs N", 200 / 3),
    TextFigure("spans_not_entities", "share of spans that are not entities (Fig. 4)",
               "about 90% of spans not entities", 90.0),
    TextFigure("entities_h", "H share of entity spans (Fig. 4)", "over 90% of entities H", 90.0, "over"),
    TextFigure("early_rounds_h", "H share of the early rounds' labels", "~90% H", 90.0),
    TextFigure("pool", "instances in the pool", "~1M", 1_000_000, "about", 0.5e6, ""),
)  # fmt: skip

# The annotation: agreement of the judges (§3.3) and the label balance of the judged instances (§3.4).
ANNOTATION = (
    Figure("share_consensus", "items with a consensus label", 86.12),
    Figure("share_agreement_80", "items with >= 80% agreement", 78.47),
    Figure("share_agreement_100", "items with full agreement", 71.24),
    Figure("krippendorff_alpha", "Krippendorff's alpha", 0.87, ""),
    Figure("share_h", "hallucination (H) share of the labels", 54.5),
    Figure("share_n", "not-hallucination (N) share of the labels", 45.5),
)
# The three agreement shares in the order of the bands they cut (annotate/rules.py), and their names.
SHARE_KEYS = ("share_agreement_100", "share_agreement_80", "share_consensus")
SHARE_NAMES = {"share_agreement_100": "full agreement", "share_agreement_80": ">= 80% agreement",
               "share_consensus": "consensus"}  # fmt: skip
# The rounds: "increasing the annotation scale with each round (~200 to ~4000)"; annotated instances and
# the instances that reached consensus are two counts, each compared with its own counterpart of ours.
ROUNDS = (
    Figure("rounds", "selection rounds", 14, ""),
    Figure("annotated", "annotated instances", 12_719, ""),
    Figure("consensus", "instances with a consensus label", 10_954, ""),
    Figure("hits", "HITs (judgments)", 71_226, ""),
)
FIRST_ROUND_SIZE, LAST_ROUND_SIZE = 200, 4000  # "~200 to ~4000"
SPLIT = {"train": 8_754, "valid": 1_000, "test": 1_200}
# The test split's class counts: the only integers that fit every row of Tables 2 and 3 (see below).
TEST_N, TEST_H = 634, 566

# A printed figure carries up to half a unit of its last digit; a derived one carries what its inputs
# carry. A relation holds when the printed value lies within both of the derived one.
HALF_UNIT = 0.005


def f1(precision: float, recall: float) -> float:
    """The harmonic mean of ``precision`` and ``recall`` (both in percent), in percent."""
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def confusion(row: dict[str, float], n: int = TEST_N, h: int = TEST_H) -> tuple[int, int, int, int] | None:
    """(TN, FP, FN, TP) on a test split of ``n`` N and ``h`` H items whose recalls round to the row's, or
    None when no whole count gives them (the row does not fit that split)."""
    tn, tp = round(n * row["n_recall"] / 100), round(h * row["h_recall"] / 100)
    if abs(100 * tn / n - row["n_recall"]) > HALF_UNIT or abs(100 * tp / h - row["h_recall"]) > HALF_UNIT:
        return None
    return tn, n - tn, h - tp, tp


def derived_from_counts(tn: int, fp: int, fn: int, tp: int) -> dict[str, float]:
    """Every table metric a confusion matrix determines, in percent (BSS and AUC need the probabilities)."""
    n_precision, h_precision = 100 * tn / (tn + fn), 100 * tp / (tp + fp)
    n_recall, h_recall = 100 * tn / (tn + fp), 100 * tp / (tp + fn)
    return {
        "accuracy": 100 * (tn + tp) / (tn + fp + fn + tp),
        "gmean": math.sqrt(n_recall * h_recall),
        "n_precision": n_precision,
        "n_recall": n_recall,
        "n_f1": f1(n_precision, n_recall),
        "h_precision": h_precision,
        "h_recall": h_recall,
        "h_f1": f1(h_precision, h_recall),
    }


NAMES = {"accuracy": "accuracy", "gmean": "G-Mean", "n_precision": "not-hallucination P",
         "n_recall": "not-hallucination R", "n_f1": "not-hallucination F1", "h_precision": "hallucination P",
         "h_recall": "hallucination R", "h_f1": "hallucination F1"}  # fmt: skip


def _within(given: float, derive, *inputs: float) -> tuple[bool, float]:
    """Whether ``given`` (printed) can follow from ``derive(*inputs)`` when every input and the output
    carry up to half a unit of their last printed digit; also the value the printed inputs give."""
    value = derive(*inputs)
    slack = HALF_UNIT + sum(
        abs(derive(*inputs[:i], x + HALF_UNIT, *inputs[i + 1 :]) - value) for i, x in enumerate(inputs)
    )
    return abs(value - given) <= slack, value


def cell_note(table: str, row: str, values: dict[str, float], key: str) -> str | None:
    """Why the printed ``key`` of a row does not follow from the row's other figures, or None. F1 follows
    from P and R and G-Mean from the two recalls; accuracy and the precisions from the confusion matrix
    the recalls give on the test split."""
    if key not in values:
        return None
    given = f"{table} ({row}): the paper's {NAMES[key]} of {values[key]:.2f}" if key in NAMES else ""
    if key.endswith("_f1"):
        p, r = values[f"{key[0]}_precision"], values[f"{key[0]}_recall"]
        ok, value = _within(values[key], f1, p, r)
        return None if ok else f"{given} does not follow from its own P {p:.2f} and R {r:.2f}, which give {value:.2f}"
    if key == "gmean":
        ok, value = _within(values[key], lambda a, b: math.sqrt(a * b), values["n_recall"], values["h_recall"])
        return None if ok else (f"{given} does not follow from its own recalls {values['n_recall']:.2f} and "
                                f"{values['h_recall']:.2f}, which give {value:.2f}")  # fmt: skip
    if key not in ("accuracy", "n_precision", "h_precision"):
        return None
    counts = confusion(values)
    if counts is None:
        return f"{table} ({row}): its recalls fit no {TEST_N} N / {TEST_H} H test split" if key == "accuracy" else None
    value = derived_from_counts(*counts)[key]
    if abs(value - values[key]) <= HALF_UNIT:
        return None
    tn, fp, fn, tp = counts
    return (f"{given} does not follow from its recalls on a {TEST_N} N / {TEST_H} H test split "
            f"(TN {tn}, FP {fp}, FN {fn}, TP {tp}), which give {value:.2f}")  # fmt: skip


def inconsistencies() -> list[str]:
    """Every printed figure that does not follow from the others it is tied to: each table row against
    the confusion matrix its recalls give on the test split (F1 from P and R, G-Mean from the recalls,
    accuracy and precisions from the counts), Table 4 (``table_4_notes``), the split against the
    10,954 with a consensus label, the consensus share against 10,954 of the 12,719 annotated, the label
    shares against each other, and the 71,226 HITs against the judgments the panels allow."""
    notes = [
        note
        for name, (table, rows) in TABLES.items()
        for row, values in rows.items()
        for key in METRIC_KEYS
        if (note := cell_note(table, row, values, key))
    ]
    figures = {f.key: f.value for f in ANNOTATION + ROUNDS}
    notes += table_4_notes() + count_notes(figures)
    if sum(SPLIT.values()) != figures["consensus"]:
        notes.append(f"the split {SPLIT} adds up to {sum(SPLIT.values())}, not the {figures['consensus']} "
                     "instances with a consensus label")  # fmt: skip
    if SPLIT["test"] != TEST_N + TEST_H:
        notes.append(f"the test split of {SPLIT['test']} is not {TEST_N} N + {TEST_H} H")
    share = 100 * figures["consensus"] / figures["annotated"]
    if abs(share - figures["share_consensus"]) > HALF_UNIT:
        notes.append(f"{figures['consensus']} of {figures['annotated']} is {share:.2f}%, "
                     f"not the {figures['share_consensus']:.2f}% with a consensus label")  # fmt: skip
    if abs(figures["share_h"] + figures["share_n"] - 100) > 0.1:
        notes.append(f"the label shares {figures['share_h']} and {figures['share_n']} do not add up to 100%")
    return notes


def table_4_notes() -> list[str]:
    """Table 4's figures against Table 1, Appendix A's words and each other (``paper_table_4.notes``), and
    the entity shares its NER rows imply against Fig. 4's words."""
    return paper_table_4.notes(TABLE_1) + fig_4_notes()


def _meets(figure: TextFigure, low: float, high: float) -> bool:
    """Whether some value from ``low`` to ``high`` reads as ``figure``'s words say."""
    if figure.compare == "over":
        return high > figure.value
    return low <= figure.value + figure.tolerance and high >= figure.value - figure.tolerance


def fig_4_notes() -> list[str]:
    """Each of Fig. 4's entity shares whose words no share the NER rows of Table 4 imply meets (those
    rows weighted by the label shares of the annotation)."""
    share_h = next(f.value for f in ANNOTATION if f.key == "share_h")
    implied = paper_table_4.entity_shares(share_h) or {}
    notes = []
    for figure in TEXT_FIGURES:
        low, high = implied.get(figure.key, (None, None))
        if low is not None and not _meets(figure, low, high):
            notes.append(f"Table 4's NER rows imply {low:.1f}% to {high:.1f}% for the {figure.label}, "
                         f'not "{figure.words}"')  # fmt: skip
    return notes


def whole_count(share: float, total: int) -> int:
    """The count of ``total`` nearest ``share`` percent of it. At 12,719 items one item is 0.008 points, so
    every two-decimal share is some whole count: only the counts it implies can be checked."""
    return round(total * share / 100)


def count_notes(figures: dict[str, float]) -> list[str]:
    """The HITs against the most judgments panels of 4, then 6, allow when the full-agreement share of
    the 12,719 annotated items stops at 4 (the consensus share against the two counts, and the split
    against the consensus count, are ``inconsistencies()``'s own)."""
    annotated = int(figures["annotated"])
    unanimous = whole_count(figures["share_agreement_100"], annotated)
    most = 4 * unanimous + 6 * (annotated - unanimous)
    if figures["hits"] <= most:
        return []
    return [f"the {int(figures['hits']):,} HITs exceed the {most:,} judgments that panels of 4 (then 6) give "
            f"{annotated:,} items of which {figures['share_agreement_100']:.2f}% stop at 4: they count something "
            "besides these items' judgments, which the paper does not say"]  # fmt: skip
