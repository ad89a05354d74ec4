"""The ``annotate`` config section: judge panels, consensus and the dataset split."""

from __future__ import annotations

from dataclasses import dataclass

from hades_ray.config_keys import BIG, key, require


@dataclass
class AnnotateConfig:
    # Paper: 4 judges per item; an item without consensus gets 2 more; still none: left out.
    judges: int = key(4, "[1, 100]", help="first panel size")
    max_judges: int = key(6, "[1, 100]")
    # Consensus (see pool/consensus.py; the paper gives no vote counts, every rule is our reading).
    # panel: with a first panel (judges <= n < max_judges) the minority may hold at most
    # ``judges - min_agree_first`` votes (3 of 4), else the missing judges up to max_judges are asked at once;
    # stepwise: one judge more at a time until the majority holds ``min_agree_first`` votes (4-0, then 4-1).
    # With a full panel (n >= max_judges) the majority needs ``min_agree_final`` votes (4 of 6). Both are
    # strict majorities. `hades-ray annotations shares` says which rules fit the paper's shares.
    consensus_rule: str = key(
        "panel",
        choices=("panel", "stepwise"),
        help="panel: a first panel decides or the rest of the full panel is asked at once; stepwise: one more "
        "judge at a time until the majority holds min_agree_first votes",
    )
    min_agree_first: int = key(3, "[1, 100]")
    min_agree_final: int = key(4, "[1, 100]")
    question: str = (
        "Is the highlighted span in the perturbed text a hallucination (H: not supported by, or "
        "contradicting, the original text's facts) or not (N)?"
    )
    # Dataset split as proportions (paper: 8,754 / 1,000 / 1,200 instances).
    split: list[float] = key([8754.0, 1000.0, 1200.0], f"[0, {BIG}]")
    # Simulated judges (offline demos and tests only).
    simulate_noise: float = key(0.1, "[0, 0.5]", help="share of simulated judgments flipped")
    simulate_similarity: float = key(0.6, "[-1, 1]")  # a replacement at least this similar to the original reads as N

    def split_shares(self) -> list[float]:
        total = sum(self.split)
        return [s / total for s in self.split]

    def validate(self) -> None:
        require(
            (self.max_judges >= self.judges, "annotate.max_judges must be >= annotate.judges"),
            (
                self.judges // 2 < self.min_agree_first <= self.judges,
                "annotate.min_agree_first: a strict majority of judges",
            ),
            (
                self.max_judges // 2 < self.min_agree_final <= self.max_judges,
                "annotate.min_agree_final: a strict majority of max_judges",
            ),
            (
                len(self.split) == 3 and sum(self.split) > 0,
                "annotate.split: three non-negative proportions (train, valid, test)",
            ),
        )
