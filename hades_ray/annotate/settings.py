"""The ``annotate`` config section: judge panels, consensus and the dataset split."""

from __future__ import annotations

from dataclasses import dataclass, field

from hades_ray.errors import ConfigError


@dataclass
class AnnotateConfig:
    # Paper: 4 judges per item; an item without consensus gets 2 more; still none: left out.
    judges: int = 4
    max_judges: int = 6
    # Consensus (see annotate/consensus.py): with a first panel (judges <= n < max_judges) the minority
    # may hold at most ``judges - min_agree_first`` votes (3 of 4); with a full panel (n >= max_judges)
    # the majority needs ``min_agree_final`` votes (4 of 6). Both are strict majorities.
    min_agree_first: int = 3
    min_agree_final: int = 4
    question: str = (
        "Is the highlighted span in the perturbed text a hallucination (H: not supported by, or "
        "contradicting, the original text's facts) or not (N)?"
    )
    # Dataset split as proportions (paper: 8,754 / 1,000 / 1,200 instances).
    split: list[float] = field(default_factory=lambda: [8754.0, 1000.0, 1200.0])
    # Simulated judges (offline demos and tests only).
    simulate_noise: float = 0.1
    simulate_similarity: float = 0.6  # a replacement at least this similar to the original reads as N

    def split_shares(self) -> list[float]:
        total = sum(self.split)
        return [s / total for s in self.split]

    def validate(self) -> None:
        checks = [
            (self.judges >= 1, "annotate.judges must be >= 1"),
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
                len(self.split) == 3 and all(s >= 0 for s in self.split) and sum(self.split) > 0,
                "annotate.split: three non-negative proportions (train, valid, test)",
            ),
            (0.0 <= self.simulate_noise <= 0.5, "annotate.simulate_noise must be in [0, 0.5]"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
