"""Span features of the LR/SVM detectors as pipeline stages: spaCy tags and MLM probability/entropy,
then the corpus statistics and the linear model. ``feature_matrix`` runs the same feature stages in
this process for the judged sets a detector trains on, and stacks them as ``LinearScoreStage`` does.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from hades_ray.detect.features.span_features import TAG_NAMES, mlm_span_features, tag_spans
from hades_ray.detect.features.lexical import LexicalStats
from hades_ray.detect.scoring import SCORE_OUTPUTS, SPAN_INPUTS, instances_table, items_from_table
from hades_ray.io.hades_format import Instance
from hades_ray.pipeline.stage import Resources, Stage, setup_torch
from hades_ray.text.languages import Language, language_of

FEATURE_NAMES = ("mlm_prob", "mlm_entropy", "tfidf", "ppmi") + TAG_NAMES
VECTOR = pa.list_(pa.float32())


class SpanTagStage(Stage):
    """spaCy: the share of the span's words with each POS tag and entity type."""

    name = "span_tags"
    inputs = SPAN_INPUTS
    outputs = {"tags": VECTOR}

    def __init__(self, resources: Resources, spacy_model: str, language: Language):
        super().__init__(resources)
        self.spacy_model, self.language = spacy_model, language

    def setup(self) -> None:
        from hades_ray.text.pipeline import load_pipeline

        self.nlp = load_pipeline(self.language, self.spacy_model)

    def process(self, batch: pa.Table) -> dict[str, list]:
        return {"tags": list(tag_spans(self.nlp, items_from_table(batch)))}


class MlmFeatureStage(Stage):
    """Model: the MLM's average probability of the masked span's subwords and its average entropy."""

    name = "mlm_features"
    inputs = SPAN_INPUTS
    outputs = {"mlm": VECTOR}

    def __init__(self, resources: Resources, source: str, window: int):
        super().__init__(resources)
        self.source, self.window = source, window

    def setup(self) -> None:
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        device = setup_torch(self.resources)
        self.tokenizer = AutoTokenizer.from_pretrained(self.source)
        self.model = AutoModelForMaskedLM.from_pretrained(self.source).eval().to(device)

    def process(self, batch: pa.Table) -> dict[str, list]:
        return {"mlm": list(mlm_span_features(self.model, self.tokenizer, items_from_table(batch), self.window))}


def corpus_features(lexical: LexicalStats, batch: pa.Table) -> np.ndarray:
    return np.array([lexical.features(it["words"], it["start"], it["end"]) for it in items_from_table(batch)])


def stack_features(batch: pa.Table, corpus: np.ndarray) -> np.ndarray:
    """``[n, len(FEATURE_NAMES)]`` in ``FEATURE_NAMES`` order."""
    mlm = np.array(batch.column("mlm").to_pylist(), dtype=np.float64).reshape(-1, 2)
    tags = np.array(batch.column("tags").to_pylist(), dtype=np.float64).reshape(-1, len(TAG_NAMES))
    return np.hstack([mlm, corpus.reshape(-1, 2), tags])


class LinearScoreStage(Stage):
    """CPU: TF-IDF and PPMI from the detector's corpus statistics, then its linear model's p(H)."""

    name = "linear"
    inputs = {**SPAN_INPUTS, "mlm": VECTOR, "tags": VECTOR}
    outputs = SCORE_OUTPUTS
    drops = ("mlm", "tags")

    def __init__(self, resources: Resources, model_dir: str):
        super().__init__(resources)
        self.model_dir = model_dir

    def setup(self) -> None:
        from hades_ray.detect.features.linear import load_linear

        self.lexical, self.params = LexicalStats.load(self.model_dir), load_linear(self.model_dir)

    def process(self, batch: pa.Table) -> dict[str, np.ndarray]:
        from hades_ray.detect.features.linear import predict_linear

        p, pred = predict_linear(self.params, stack_features(batch, corpus_features(self.lexical, batch)))
        return {"p_hallucination": p, "pred": pred.astype(np.int8)}


def model_feature_stages(settings: dict, d) -> list[Stage]:
    """spaCy tags (one actor) and MLM features (``detect.actors`` actors) with the detect section's resources;
    ``settings`` are a feature detector's (``mlm``, ``feature_window``, ``spacy_model``, and ``language``
    where it is not English: a detector saved without one is English's)."""
    from hades_ray.models.registry import resolve_model

    tag = Resources(num_cpus=d.actor_cpus, batch_size=d.feature_batch_size * 4, torch_threads=d.torch_threads)
    mlm = Resources(
        num_cpus=d.actor_cpus, max_actors=d.actors, batch_size=d.feature_batch_size, torch_threads=d.torch_threads
    )
    return [
        SpanTagStage(tag, settings["spacy_model"], language_of(settings)),
        MlmFeatureStage(mlm, resolve_model(settings["mlm"]), settings["feature_window"]),
    ]


def feature_matrix(instances: list[Instance], lexical: LexicalStats, settings: dict, d) -> np.ndarray:
    """``[n, len(FEATURE_NAMES)]`` span features of a judged set (in-process: a detector trains on it)."""
    if not instances:
        return np.zeros((0, len(FEATURE_NAMES)))
    from hades_ray.pipeline.executor import run_stages

    table = run_stages(instances_table(instances), model_feature_stages(settings, d))
    return stack_features(table, corpus_features(lexical, table))
