"""The ``select`` config section: how a round chooses the instances judges see (paper §3.3)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hades_ray.errors import ConfigError


@dataclass
class RoundSchedule:
    """Batch sizes growing from ``first`` to ``last`` over ``rounds`` rounds, ``total`` in all, as a power
    curve ``first + (last - first) * (k / (rounds - 1)) ** p`` (``hades_ray/select/schedule.py``).
    ``rounds: 0`` turns it off (``select.round_sizes`` applies)."""

    rounds: int = 0
    first: int = 200
    last: int = 4000
    total: int = 12719

    def total_range(self) -> tuple[int, int]:
        """The totals a schedule can reach: every round ``first`` but the last, up to every round ``last``
        but the first."""
        return (self.rounds - 1) * self.first + self.last, self.first + (self.rounds - 1) * self.last


@dataclass
class SelectConfig:
    # Batch size per round; rounds past the end of the list reuse its last value. ``schedule`` replaces
    # the list when its ``rounds`` is set (the paper preset: 14 rounds from 200 to 4,000, 12,719 in all).
    round_sizes: list[int] = field(default_factory=lambda: [200, 4000])
    schedule: RoundSchedule = field(default_factory=RoundSchedule)
    # p(H) thresholds; a negative value means "find it this round" so that ``candidate_target`` remain.
    p_low: float = -1.0
    p_high: float = -1.0
    # Candidates left after EVERY filter (p(H) band, paraphrase cut, Date/Name drop, Eq. 1 subsampling),
    # from which the batch is drawn; the p(H) band is widened or narrowed to reach it. 0: 3x the batch.
    candidate_target: int = 0
    paraphrase_threshold: float = 0.9  # cosine similarity above which a replacement counts as a paraphrase
    # cls | mean | auto (paper: RoBERTa [CLS]; auto: mean for the local MiniLM, trained for mean pooling,
    # [CLS] for any other encoder)
    paraphrase_pooling: str = "auto"
    paraphrase_context_words: int = 0  # words either side of the span that the similarity sees; 0: span only
    similarity_batch_size: int = 64
    # fractional: Ray Data read/write tasks need a free CPU next to the actors (hades_ray/pipeline/executor.py)
    similarity_num_cpus: float = 0.5
    similarity_num_gpus: float = 0.0
    feature_concurrency: int = 1  # most encoder (and spaCy) actors computing the pool's features
    spacy_num_cpus: float = 0.25
    spacy_batch_size: int = 256
    # Share of Date/Name swaps dropped, sampled by seed (the paper gives none; 1.0 drops them all).
    date_name_drop_share: float = 0.8
    # spaCy entity labels that count as a Date or a Name: a span of one of them replaced by a span of
    # any of them (DATE->DATE, DATE->PERSON, PERSON->PERSON...) is a Date/Name swap. The Names are
    # PERSON by default; add ORG, GPE... to count those as Names too.
    swap_entity_types: list[str] = field(default_factory=lambda: ["DATE", "PERSON"])
    ner_context_words: int = 15  # window around the span that spaCy sees for NER, POS and lemmas
    # How the round detector trains (select/detector.py). crossval (the paper: "using the accumulated
    # data"): on every judged instance, with the epoch and alpha, beta, gamma from out-of-fold predictions
    # of ``folds`` folds, the rates on the last round's judgments (``rates_from``: last_round | all_rounds).
    # split: training, ``heldout_share`` that picks the best epoch, and ``calibration_share`` that neither
    # trained nor selected it, to estimate alpha, beta, gamma.
    detector_training: str = "crossval"
    folds: int = 5
    rates_from: str = "last_round"
    heldout_share: float = 0.2
    calibration_share: float = 0.2
    min_train_instances: int = 20  # fewer judged instances (or one class only): the round falls back to random
    detector: str = "transformer"
    # The round detector's backbone; empty: detect.backbone, else models.encoder. The paper's rounds
    # use a detector "initiated with BERT" (the paper preset sets bert-base-cased).
    detector_backbone: str = ""
    detector_workers: int = 1
    score_num_gpus: float = 0.0  # per detector-scoring actor (its CPUs and pool size: detect.actor_cpus/actors)

    def pooling_for(self, encoder: str) -> str:
        if self.paraphrase_pooling != "auto":
            return self.paraphrase_pooling
        return "mean" if encoder == "local:minilm" or "minilm" in encoder.lower() else "cls"

    def validate(self) -> None:
        checks = [
            (bool(self.round_sizes) and all(s >= 1 for s in self.round_sizes), "select.round_sizes: positive sizes"),
            (self.schedule.rounds != 1, "select.schedule.rounds: 0 (off) or at least 2"),
            (1 <= self.schedule.first <= self.schedule.last, "select.schedule: 1 <= first <= last"),
            (self.p_low < 0 or self.p_high < 0 or self.p_low < self.p_high, "select.p_low must be below select.p_high"),
            (self.p_low <= 1 and self.p_high <= 1, "select.p_low/p_high must be <= 1 (negative: found per round)"),
            (self.candidate_target >= 0, "select.candidate_target must be >= 0"),
            (0.0 < self.paraphrase_threshold <= 1.0, "select.paraphrase_threshold must be in (0, 1]"),
            (self.paraphrase_pooling in ("auto", "cls", "mean"), "select.paraphrase_pooling: auto, cls or mean"),
            (0.0 <= self.date_name_drop_share <= 1.0, "select.date_name_drop_share must be in [0, 1]"),
            (self.detector_training in ("crossval", "split"), "select.detector_training: crossval or split"),
            (self.folds >= 2, "select.folds must be >= 2"),
            (self.rates_from in ("last_round", "all_rounds"), "select.rates_from: last_round or all_rounds"),
            (0.0 < self.heldout_share < 1.0, "select.heldout_share must be in (0, 1)"),
            (0.0 < self.calibration_share < 1.0, "select.calibration_share must be in (0, 1)"),
            (
                self.heldout_share + self.calibration_share < 0.9,
                "select.heldout_share + calibration_share must be < 0.9",
            ),
            (self.feature_concurrency >= 1, "select.feature_concurrency must be >= 1"),
            (self.similarity_num_cpus > 0 and self.spacy_num_cpus > 0, "select.*_num_cpus must be > 0"),
            (self.spacy_batch_size >= 1, "select.spacy_batch_size must be >= 1"),
            (self.paraphrase_context_words >= 0 and self.ner_context_words >= 0, "select.*_context_words >= 0"),
            (self.similarity_batch_size >= 1, "select.similarity_batch_size must be >= 1"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
        s = self.schedule
        lowest, highest = s.total_range()
        if s.rounds and not lowest <= s.total <= highest:
            raise ConfigError(f"select.schedule.total: {s.total} cannot grow from {s.first} to {s.last} in "
                              f"{s.rounds} rounds; give one in [{lowest}, {highest}]")  # fmt: skip
