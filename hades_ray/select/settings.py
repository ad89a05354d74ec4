"""The ``select`` config section: how a round chooses the instances judges see (paper §3.3)."""

from __future__ import annotations

import math

from dataclasses import dataclass, field

from hades_ray.config_keys import BIG, key, require
from hades_ray.detect.settings import DETECTORS
from hades_ray.errors import ConfigError


@dataclass
class RoundSchedule:
    """Batch sizes growing from ``first`` to ``last`` over ``rounds`` rounds, ``total`` in all, each round
    larger than the one before: ``first + s*k + (last - first - s*(rounds - 1)) * (k / (rounds - 1)) ** p``
    with ``s`` the least growth a round (``hades_ray/select/schedule.py``). ``rounds: 0`` turns it off
    (``select.round_sizes`` applies)."""

    rounds: int = key(0, "[2, 10000]", choices=(0,))
    first: int = key(200, "[1, 10000000]")
    last: int = key(4000, "[1, 10000000]")
    total: int = key(12719, f"[1, {BIG}]")

    def step(self) -> float:
        """The least growth from one round to the next: 2 (so rounding never makes two rounds equal), or
        less where ``last`` is too close to ``first`` for that."""
        return min(2.0, (self.last - self.first) / (self.rounds - 1))

    def total_range(self) -> tuple[int, int]:
        """The totals a schedule can reach: every round but the last growing by ``step`` only, up to every
        round but the first at ``last`` less what the steps still owe it."""
        climb = self.step() * (self.rounds - 1) * (self.rounds - 2) / 2
        low = (self.rounds - 1) * self.first + climb + self.last
        high = self.first + (self.rounds - 1) * self.last - climb
        return math.ceil(low), math.floor(high)


@dataclass
class SelectConfig:
    # Batch size per round; rounds past the end of the list reuse its last value. ``schedule`` replaces
    # the list when its ``rounds`` is set (the paper preset: 14 rounds from 200 to 4,000, 12,719 in all).
    round_sizes: list[int] = key([200, 4000], "[1, 10000000]")
    schedule: RoundSchedule = field(default_factory=RoundSchedule)
    # p(H) thresholds; a negative value means "find it this round" so that ``candidate_target`` remain.
    p_low: float = key(-1.0, "[-1, 1]")
    p_high: float = key(-1.0, "[-1, 1]")
    # Candidates left after EVERY filter (p(H) band, paraphrase cut, Date/Name drop, Eq. 1 subsampling),
    # from which the batch is drawn; the p(H) band is widened or narrowed to reach it. 0: 3x the batch.
    candidate_target: int = key(0, f"[0, {BIG}]")
    # cosine similarity above which a replacement counts as a paraphrase
    paraphrase_threshold: float = key(0.9, "(0, 1]")
    # cls | mean | auto (paper: RoBERTa [CLS]; auto: mean for the local MiniLM, trained for mean pooling,
    # [CLS] for any other encoder)
    paraphrase_pooling: str = key("auto", choices=("auto", "cls", "mean"))
    # words either side of the span that the similarity sees; 0: span only
    paraphrase_context_words: int = key(0, "[0, 10000]")
    similarity_batch_size: int = key(64, "[1, 100000]")
    # fractional: Ray Data read/write tasks need a free CPU next to the actors (hades_ray/pipeline/executor.py)
    similarity_num_cpus: float = key(0.5, "(0, 1024]")
    similarity_num_gpus: float = key(0.0, "[0, 64]")
    feature_concurrency: int = key(1, "[1, 10000]")  # most encoder (and spaCy) actors computing the pool's features
    spacy_num_cpus: float = key(0.25, "(0, 1024]")
    spacy_batch_size: int = key(256, "[1, 100000]")
    # Share of Date/Name swaps dropped, sampled by seed (the paper gives none; 1.0 drops them all).
    date_name_drop_share: float = key(0.8, "[0, 1]")
    # spaCy entity labels that count as a Date or a Name: a span of one of them replaced by a span of
    # any of them (DATE->DATE, DATE->PERSON, PERSON->PERSON...) is a Date/Name swap. The Names are
    # PERSON by default; add ORG, GPE... to count those as Names too. Labels go by spaCy's English names in
    # every language (a pipeline's PER is a PERSON: hades_ray/text/languages.py); where the run's pipeline
    # labels none of one of them (the multilingual one labels no dates), the round says so.
    swap_entity_types: list[str] = field(default_factory=lambda: ["DATE", "PERSON"])
    ner_context_words: int = key(15, "[0, 10000]")  # window around the span that spaCy sees for NER, POS and lemmas
    # How the round detector trains (select/detector.py). crossval (our reading of the paper's "using the
    # accumulated data"): on every judged instance, with the epoch and alpha, beta, gamma from out-of-fold
    # predictions of ``folds`` folds, the rates on the last round's judgments (``rates_from``: last_round |
    # all_rounds), or (previous_detector, the literal reading of "based on the annotation from last round")
    # the last round's batch as the previous round's detector scored it.
    # split: training, ``heldout_share`` that picks the best epoch, and ``calibration_share`` that neither
    # trained nor selected it, to estimate alpha, beta, gamma.
    detector_training: str = key("crossval", choices=("crossval", "split"))
    folds: int = key(5, "[2, 100]")
    rates_from: str = key("last_round", choices=("last_round", "all_rounds", "previous_detector"))
    heldout_share: float = key(0.2, "(0, 1)")
    calibration_share: float = key(0.2, "(0, 1)")
    # fewer judged instances (or one class only): the round falls back to random
    min_train_instances: int = key(20, f"[1, {BIG}]")
    detector: str = key("transformer", choices=DETECTORS, help="the round detector: transformer, lr or svm")
    # The round detector's backbone; empty: detect.backbone, else models.encoder. The paper's rounds
    # use a detector "initiated with BERT" (the paper preset sets bert-base-cased).
    detector_backbone: str = ""
    detector_workers: int = key(1, "[1, 10000]")
    # per detector-scoring actor (its CPUs and pool size: detect.actor_cpus/actors)
    score_num_gpus: float = key(0.0, "[0, 64]")

    def pooling_for(self, encoder: str) -> str:
        if self.paraphrase_pooling != "auto":
            return self.paraphrase_pooling
        return "mean" if encoder == "local:minilm" or "minilm" in encoder.lower() else "cls"

    def validate(self) -> None:
        require(
            (bool(self.round_sizes), "select.round_sizes: positive sizes"),
            (self.schedule.first <= self.schedule.last, "select.schedule: 1 <= first <= last"),
            (self.p_low < 0 or self.p_high < 0 or self.p_low < self.p_high, "select.p_low must be below select.p_high"),
            (
                self.heldout_share + self.calibration_share < 0.9,
                "select.heldout_share + calibration_share must be < 0.9",
            ),
        )
        s = self.schedule
        lowest, highest = s.total_range()
        if s.rounds and not lowest <= s.total <= highest:
            raise ConfigError(f"select.schedule.total: {s.total} cannot grow from {s.first} to {s.last} in "
                              f"{s.rounds} rounds; give one in [{lowest}, {highest}]")  # fmt: skip
