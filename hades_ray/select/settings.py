"""The ``select`` config section: how a round chooses the instances judges see (paper Sec. 3.2)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hades_ray.errors import ConfigError


@dataclass
class SelectConfig:
    # Batch size per round; rounds past the end of the list reuse its last value (paper: 200 first, then ~4,000).
    round_sizes: list[int] = field(default_factory=lambda: [200, 4000])
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
    date_name_drop_share: float = 0.8  # share of DATE->DATE and PERSON->PERSON swaps dropped, sampled by seed
    swap_entity_types: list[str] = field(default_factory=lambda: ["DATE", "PERSON"])
    ner_context_words: int = 15  # window around the span that spaCy sees for NER, POS and lemmas
    # Judged instances are split three ways: training, ``heldout_share`` that picks the detector's best
    # epoch, and ``calibration_share`` that neither trained nor selected it, to estimate alpha, beta, gamma.
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

    def round_size(self, round_index: int) -> int:
        return self.round_sizes[min(round_index, len(self.round_sizes) - 1)]

    def validate(self) -> None:
        checks = [
            (bool(self.round_sizes) and all(s >= 1 for s in self.round_sizes), "select.round_sizes: positive sizes"),
            (self.p_low < 0 or self.p_high < 0 or self.p_low < self.p_high, "select.p_low must be below select.p_high"),
            (self.p_low <= 1 and self.p_high <= 1, "select.p_low/p_high must be <= 1 (negative: found per round)"),
            (self.candidate_target >= 0, "select.candidate_target must be >= 0"),
            (0.0 < self.paraphrase_threshold <= 1.0, "select.paraphrase_threshold must be in (0, 1]"),
            (self.paraphrase_pooling in ("auto", "cls", "mean"), "select.paraphrase_pooling: auto, cls or mean"),
            (0.0 <= self.date_name_drop_share <= 1.0, "select.date_name_drop_share must be in [0, 1]"),
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
