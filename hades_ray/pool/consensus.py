"""Consensus among judges: the paper's 4 judges per item, 2 more where they do not agree (§3.3, App. B).

The paper asks for consensus but gives no vote counts, so every rule here is our reading, each decision a
strict majority (``annotate.consensus_rule``):

* fewer than ``judges`` (4) judgments: ``pending``;
* ``panel`` (the default): a first panel (``judges <= n < max_judges``) reaches consensus when the
  minority holds at most ``judges - min_agree_first`` votes: with 3 (``local``) 3-1 or 4-0 of 4, with 4
  (``paper``) 4-0 only; otherwise ``needs_more`` and the next export asks for every missing judge up to
  ``max_judges`` at once (a 5th judgment that leaves it undecided waits for the 6th);
* ``stepwise``: one more judge at a time until the majority holds ``min_agree_first`` votes: with 4, 4-0
  of 4, else 3-1 gets a 5th (4-1 is consensus) and 3-2 or 2-2 go to six;
* a full panel (``n >= max_judges``, 6): consensus when the majority holds ``min_agree_final`` (4 of 6)
  votes and is a strict majority; otherwise ``no_consensus`` and the item is left out of the dataset.

Two rules fit the paper's three shares (71.24% full agreement, 78.47% at least 80%, 86.12% consensus):
``panel`` with ``min_agree_first`` 4 and ``stepwise`` with 4; only ``stepwise`` can end at the paper's
own "4/5" example. ``hades-ray annotations shares`` rebuilds the shares from a rule (``annotate/rules.py``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

LABELS = ("N", "H")  # index = the HaDes label: 0 not a hallucination, 1 hallucination


RULES = ("panel", "stepwise")


def item_status(
    n_h: int,
    n_n: int,
    judges: int = 4,
    max_judges: int = 6,
    min_agree_first: int = 3,
    min_agree_final: int = 4,
    rule: str = "panel",
) -> tuple[str, int | None]:
    """(status, label) of one item from its H and N vote counts; label is 1/0 only with consensus."""
    total, top = n_h + n_n, max(n_h, n_n)
    label = 1 if n_h > n_n else 0
    if total < judges:
        return "pending", None
    if total >= max_judges:
        ok = top >= min_agree_final and top * 2 > total
        return ("consensus", label) if ok else ("no_consensus", None)
    if rule == "stepwise":
        decided = top >= min_agree_first and top * 2 > total
    else:
        decided = total - top <= judges - min_agree_first
    return ("consensus", label) if decided else ("needs_more", None)


def judges_needed(
    status: str, total: int, judges: int = 4, max_judges: int = 6, rule: str = "panel", top: int = 0,
    min_agree_first: int = 3,
) -> int:  # fmt: skip
    """How many more judgments the next export asks for: ``stepwise`` the fewest that could decide
    (``top``: the majority's votes), ``panel`` the rest of the full panel."""
    if status == "pending":
        return judges - total
    if status == "needs_more":
        if rule == "stepwise":
            return min(max_judges - total, max(1, min_agree_first - top))
        return max_judges - total
    return 0


def item_table(items: list[str], judgments: pd.DataFrame, cfg) -> pd.DataFrame:
    """One row per item: H/N votes, status, consensus label, agreement share and judgments still needed."""
    counts = pd.crosstab(judgments["item_id"], judgments["label"]).reindex(index=items, columns=LABELS, fill_value=0)
    votes = pd.DataFrame({"item_id": items, "n_h": counts["H"].to_numpy(), "n_n": counts["N"].to_numpy()})
    votes["total"] = votes["n_h"] + votes["n_n"]
    results = [
        item_status(h, n, cfg.judges, cfg.max_judges, cfg.min_agree_first, cfg.min_agree_final, cfg.consensus_rule)
        for h, n in zip(votes["n_h"], votes["n_n"])
    ]
    votes["status"] = [r[0] for r in results]
    votes["label"] = [r[1] if r[1] is not None else -1 for r in results]
    votes["agreement"] = np.where(
        votes["total"] > 0, votes[["n_h", "n_n"]].max(axis=1) / votes["total"].clip(lower=1), np.nan
    )
    tops = votes[["n_h", "n_n"]].max(axis=1)
    votes["needed"] = [
        judges_needed(s, t, cfg.judges, cfg.max_judges, cfg.consensus_rule, top, cfg.min_agree_first)
        for s, t, top in zip(votes["status"], votes["total"], tops)
    ]
    return votes


def krippendorff_alpha(value_counts: np.ndarray) -> float | None:
    """Nominal Krippendorff's alpha from an items x categories count matrix (None when undefined)."""
    import krippendorff

    value_counts = np.asarray(value_counts)
    value_counts = value_counts[value_counts.sum(axis=1) >= 2]
    if len(value_counts) == 0:
        return None
    try:
        value = float(krippendorff.alpha(value_counts=value_counts, level_of_measurement="nominal"))
    except (ValueError, ZeroDivisionError):
        return None  # e.g. a single category overall: no expected disagreement
    return None if np.isnan(value) else value


def agreement_report(table: pd.DataFrame) -> dict:
    """Shares over the items with at least one full panel: consensus, >= 80% and 100% agreement; alpha."""
    decided = table[table["status"] != "pending"]
    n = len(decided)

    def share(mask) -> float | None:
        return round(float(mask.sum()) / n, 4) if n else None

    alpha = krippendorff_alpha(decided[["n_n", "n_h"]].to_numpy()) if n else None
    return {
        "items": len(table),
        "judged": n,
        "consensus": int((decided["status"] == "consensus").sum()),
        "needs_more": int((decided["status"] == "needs_more").sum()),
        "no_consensus": int((decided["status"] == "no_consensus").sum()),
        "pending": int((table["status"] == "pending").sum()),
        "share_consensus": share(decided["status"] == "consensus"),
        "share_agreement_80": share(decided["agreement"] >= 0.8 - 1e-9),
        "share_agreement_100": share(decided["agreement"] >= 1.0 - 1e-9),
        "krippendorff_alpha": None if alpha is None else round(alpha, 4),
        "labels": {
            "H": int(((table["status"] == "consensus") & (table["label"] == 1)).sum()),
            "N": int(((table["status"] == "consensus") & (table["label"] == 0)).sum()),
        },
    }
