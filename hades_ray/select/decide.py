"""A round's per-row decisions over stored features and scores, as one CPU stage.

Each row's fate (in the p(H) band, a paraphrase, a Date/Name swap dropped, a predicted H kept
by Eq. 1, its sample key) depends only on the row and on the round's rule, never on its neighbours,
so shards are decided independently and the result does not depend on the pool's layout.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hades_ray.pipeline.stage import Resources, Stage
from hades_ray.pipeline.steps import digest_of
from hades_ray.select import filters


@dataclass(frozen=True)
class Rule:
    """Everything a round decides rows by (small and picklable: it travels to every worker)."""

    seed: int
    round_index: int
    paraphrase_threshold: float
    swap_entity_types: tuple[str, ...]
    drop_share: float
    taken: frozenset[str]  # ids put in an earlier round's batch
    p_low: float | None = None  # None: no p(H) band (round 0, or a round without a detector)
    p_high: float | None = None
    ratio: float | None = None  # Eq. 1's R; None: no subsampling

    @property
    def scored(self) -> bool:
        return self.p_low is not None

    def digest(self, **more) -> str:
        """The rule (and ``more``: what else a pass depends on) as part of a pass's settings digest."""
        return digest_of(dataclasses.asdict(self) | {"taken": sorted(self.taken)} | more)


def rule_for(sel, seed: int, round_index: int, taken: set[str], **band) -> Rule:
    """The rule of round ``round_index`` from the ``select`` section and the seed."""
    return Rule(
        seed=seed,
        round_index=round_index,
        paraphrase_threshold=sel.paraphrase_threshold,
        swap_entity_types=tuple(sel.swap_entity_types),
        drop_share=sel.date_name_drop_share,
        taken=frozenset(taken),
        **band,
    )


DECISIONS = {
    "unjudged": pa.bool_(),
    "keep_threshold": pa.bool_(),
    "keep_paraphrase": pa.bool_(),
    "obvious_swap": pa.bool_(),
    "keep_swap": pa.bool_(),
    "keep_rebalance": pa.bool_(),
    "alive": pa.bool_(),
    "sample_key": pa.float64(),
}


def decide(table: pa.Table, rule: Rule) -> dict[str, np.ndarray]:
    """The decision columns of ``table`` (``id``, ``similarity``, ``orig_ent``, ``repl_ent``, and
    ``p_hallucination``/``pred`` when the rule has a p(H) band)."""
    ids = table.column("id").to_pylist()
    n = len(ids)
    taken = pa.array(sorted(rule.taken), pa.string())
    unjudged = ~pc.is_in(table.column("id"), value_set=taken).to_numpy(zero_copy_only=False)
    keep_threshold = np.ones(n, dtype=bool)
    if rule.scored:
        keep_threshold = filters.threshold_keep(table.column("p_hallucination").to_numpy(), rule.p_low, rule.p_high)
    keep_paraphrase = filters.paraphrase_keep(table.column("similarity").to_numpy(), rule.paraphrase_threshold)
    frame = {"orig_ent": table.column("orig_ent").to_pandas(), "repl_ent": table.column("repl_ent").to_pandas()}
    obvious = filters.obvious_swaps(frame, list(rule.swap_entity_types))
    keep_swap = filters.swap_keep(ids, obvious, rule.drop_share, rule.seed, rule.round_index)
    keep_rebalance = np.ones(n, dtype=bool)
    if rule.ratio is not None:
        pred = table.column("pred").to_numpy()
        keep_rebalance = filters.rebalance_keep(ids, pred, rule.ratio, rule.seed, rule.round_index)
    alive = unjudged & keep_threshold & keep_paraphrase & keep_swap & keep_rebalance
    return {
        "unjudged": unjudged,
        "keep_threshold": keep_threshold,
        "keep_paraphrase": keep_paraphrase,
        "obvious_swap": obvious,
        "keep_swap": keep_swap,
        "keep_rebalance": keep_rebalance,
        "alive": alive,
        "sample_key": filters.sample_keys(ids, rule.seed, rule.round_index),
    }


def shard_counts(table: pa.Table, d: dict[str, np.ndarray], rule: Rule) -> dict[str, int]:
    """round.json's counts for one shard's decided rows (summed over shards by the driver)."""
    u = d["unjudged"]
    band = u & d["keep_threshold"]
    para = band & d["keep_paraphrase"]
    swaps = para & d["keep_swap"]
    counts = {
        "pool": int(len(u)),
        "unjudged": int(u.sum()),
        "after_thresholds": int(band.sum()),
        "after_paraphrase": int(para.sum()),
        "obvious_swaps": int((para & d["obvious_swap"]).sum()),
        "after_swaps": int(swaps.sum()),
        "after_rebalance": int(d["alive"].sum()),
    }
    if rule.scored:
        counts["scored"] = int((u & ~np.isnan(table.column("p_hallucination").to_numpy())).sum())
    if rule.ratio is not None:
        pred_h = table.column("pred").to_numpy() == 1
        counts["predicted_h_before_rebalance"] = int((swaps & pred_h).sum())
        counts["predicted_h_after_rebalance"] = int((d["alive"] & pred_h).sum())
    return counts


class DecideStage(Stage):
    """CPU: the round's decision columns (a stateless task; the rule travels with it)."""

    name = "decide"
    inputs = {"id": pa.string(), "similarity": pa.float32(), "orig_ent": pa.string(), "repl_ent": pa.string()}
    outputs = DECISIONS

    def __init__(self, resources: Resources, rule: Rule):
        super().__init__(resources)
        self.rule = rule

    def process(self, batch: pa.Table) -> dict[str, np.ndarray]:
        return decide(batch, self.rule)
