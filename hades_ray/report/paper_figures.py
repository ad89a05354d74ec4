"""The figures the HaDes paper (Liu et al., ACL 2022) reports, kept in this one place.

The report (``hades_ray/report/paper.py``) and ``hades-ray reproduce tables`` set ours beside them.
Every value is as printed in the paper, in percent except Krippendorff's alpha and the counts. A
metric the paper gives that is not listed here is missing from this module, never zero: add it here,
with where it is printed, and every comparison shows it.

Tables 2 (offline) and 3 (online) use the metric keys of ``hades_ray.metrics.binary_metrics`` (and of
the report's detector table): accuracy, gmean, bss, auc, then P/R/F1 of the not-hallucination (n_) and
the hallucination (h_) class. The paper's BERT, GPT-2, XLNet and RoBERTa rows are BERT-large (335M),
GPT2-medium (345M), XLNet-large (340M) and RoBERTa-large.
"""

from __future__ import annotations

from dataclasses import dataclass

PAPER = (
    "Liu et al., A Token-level Reference-free Hallucination Detection Benchmark for Free-form Text Generation, ACL 2022"
)

# Table 2 (offline: the detector reads the context on both sides of the span), row -> metric -> value.
TABLE_2_OFFLINE: dict[str, dict[str, float]] = {
    "LR": {"h_precision": 62.10, "h_recall": 51.24, "h_f1": 60.33},
    "BERT": {"accuracy": 71.92, "gmean": 71.95, "bss": 19.06, "auc": 78.63},
}
# Table 3 (online: only the span and what precedes it).
TABLE_3_ONLINE: dict[str, dict[str, float]] = {
    "GPT-2": {"accuracy": 71.58, "gmean": 70.98, "bss": 19.13, "auc": 77.71},
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


# The annotation: agreement of the judges and the label balance of the judged instances.
ANNOTATION = (
    Figure("share_consensus", "items with a consensus label", 86.12),
    Figure("share_agreement_80", "items with >= 80% agreement", 78.47),
    Figure("share_agreement_100", "items with full agreement", 71.24),
    Figure("krippendorff_alpha", "Krippendorff's alpha", 0.87, ""),
    Figure("share_h", "hallucination (H) share of the labels", 54.5),
    Figure("share_n", "not-hallucination (N) share of the labels", 45.5),
)
# The rounds: "increasing the annotation scale with each round (~200 to ~4000)".
ROUNDS = (
    Figure("rounds", "selection rounds", 14, ""),
    Figure("judged", "judged instances", 12_719, ""),
)


def f1(precision: float, recall: float) -> float:
    """The harmonic mean of ``precision`` and ``recall`` (both in percent), in percent."""
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def inconsistencies() -> list[str]:
    """Cells of the tables whose F1 does not follow from their own P and R (rounded to 0.01 as printed)."""
    notes = []
    for name, (table, rows) in TABLES.items():
        for row, values in rows.items():
            for side, what in (("h", "hallucination"), ("n", "not-hallucination")):
                p, r, given = (values.get(f"{side}_{k}") for k in ("precision", "recall", "f1"))
                if None not in (p, r, given) and abs(f1(p, r) - given) > 0.01:
                    notes.append(
                        f"{table} ({name}) {row}: the paper's {what} F1 of {given:.2f} does not follow from its own "
                        f"P {p:.2f} and R {r:.2f}, which give {f1(p, r):.2f}"
                    )
    return notes
