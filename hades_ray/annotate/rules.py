"""Which consensus rule fits the paper's agreement shares, and how many judgments it implies.

The paper gives three shares of its annotated items (full agreement, at least 80% agreement, consensus)
and no vote counts. A rule fits when each band the shares leave (100%; 80% to 100%; a consensus under
80%; none) holds a vote count the rule can end at. ``rebuild_shares`` builds that many items with the
cheapest such ending each, runs them through the consensus code (``item_table``, ``agreement_report``)
and returns the shares it gets back and the judgments those items took.
"""

from __future__ import annotations

import pandas as pd

from hades_ray.pool.consensus import agreement_report, item_status, item_table, judges_needed

BANDS = ("full agreement", ">= 80% agreement", "consensus under 80%", "no consensus")


def endings(cfg) -> set[tuple[int, int, str]]:
    """Every (majority votes, minority votes, status) a rule can end at, over every order of votes."""
    args = (cfg.judges, cfg.max_judges, cfg.min_agree_first, cfg.min_agree_final, cfg.consensus_rule)
    seen, todo, ends = set(), [(0, 0)], set()
    while todo:
        h, n = todo.pop()
        if (h, n) in seen:
            continue
        seen.add((h, n))
        status, _ = item_status(h, n, *args)
        if status in ("consensus", "no_consensus"):
            ends.add((max(h, n), min(h, n), status))
            continue
        more = judges_needed(
            status, h + n, cfg.judges, cfg.max_judges, cfg.consensus_rule, max(h, n), cfg.min_agree_first
        )
        todo += [(h + k, n + more - k) for k in range(more + 1)]
    return ends


def band(top: int, low: int, status: str) -> str:
    if status != "consensus":
        return BANDS[3]
    agreement = top / (top + low)
    return BANDS[0] if low == 0 else BANDS[1] if agreement >= 0.8 - 1e-9 else BANDS[2]


def band_counts(annotated: int, full: float, at_80: float, consensus: float) -> dict[str, int]:
    """Items per band from the shares (percent) of ``annotated`` items, each cumulative share rounded."""
    cumulative = [round(annotated * share / 100) for share in (full, at_80, consensus)] + [annotated]
    return {name: cumulative[i] - (cumulative[i - 1] if i else 0) for i, name in enumerate(BANDS)}


def rebuild_shares(cfg, annotated: int, full: float, at_80: float, consensus: float) -> dict:
    """The shares and judgments ``cfg``'s rule gives ``annotated`` items spread over the bands of the
    given shares (percent); ``fits`` is False, naming the bands it cannot reach, when the rule cannot."""
    counts = band_counts(annotated, full, at_80, consensus)
    by_band: dict[str, list[tuple[int, int, str]]] = {}
    for ending in endings(cfg):
        by_band.setdefault(band(*ending), []).append(ending)
    unreachable = [name for name, count in counts.items() if count and name not in by_band]
    result = {"rule": cfg.consensus_rule, "min_agree_first": cfg.min_agree_first, "bands": counts,
              "endings": {name: sorted(e[:2] for e in ends) for name, ends in by_band.items()}}  # fmt: skip
    if unreachable:
        return result | {"fits": False, "unreachable": unreachable}
    chosen = {name: min(by_band[name], key=lambda e: (e[0] + e[1], e)) for name in counts if counts[name]}
    items, rows = [], []
    for name, (top, low, _) in chosen.items():
        for k in range(counts[name]):
            item = f"{name}-{k}"
            major, minor = ("H", "N") if k % 2 else ("N", "H")
            items.append(item)
            rows += [(item, f"j{j}", major) for j in range(top)] + [(item, f"j{top + j}", minor) for j in range(low)]
    report = agreement_report(item_table(items, pd.DataFrame(rows, columns=["item_id", "judge_id", "label"]), cfg))
    return result | {
        "fits": True,
        "chosen": {name: list(ending[:2]) for name, ending in chosen.items()},
        "shares": {key: 100 * report[key] for key in ("share_agreement_100", "share_agreement_80", "share_consensus")},
        "judgments": len(rows),
        "per_item": len(rows) / annotated,
    }


def most_judgments(cfg, annotated: int, full: float) -> int:
    """The most judgments any ending of the rule allows when ``full`` percent stop at a first panel of
    ``judges``: the rest all at ``max_judges``."""
    unanimous = round(annotated * full / 100)
    return unanimous * cfg.judges + (annotated - unanimous) * cfg.max_judges
