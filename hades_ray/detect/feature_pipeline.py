"""Span feature matrices for LR/SVM: spaCy and MLM stages on a Ray Data actor pool (or in-process
for small sets), then the cheap corpus statistics in the driver."""

from __future__ import annotations

import numpy as np

from hades_ray.detect.data import to_rows
from hades_ray.detect.features import TAG_NAMES, MlmFeaturizer, SpanTagger, mlm_span_features, tag_spans
from hades_ray.detect.lexical import LexicalStats
from hades_ray.io.hades_format import Instance

FEATURE_NAMES = ("mlm_prob", "mlm_entropy", "tfidf", "ppmi") + TAG_NAMES


def _model_features_ray(rows: list[dict], settings: dict, d) -> tuple[np.ndarray, np.ndarray]:
    import ray.data

    from hades_ray.ray_runtime import cluster_cpus

    # Two actor pools side by side: with fractional CPUs the read task still finds a core (RAY_NOTES).
    actors = max(1, min(d.actors, int(cluster_cpus() / d.actor_cpus) - 1))
    ds = ray.data.from_items(rows)
    ds = ds.map_batches(
        SpanTagger,
        fn_constructor_kwargs={"spacy_model": settings["spacy_model"]},
        batch_size=d.feature_batch_size * 4,
        compute=ray.data.ActorPoolStrategy(size=1),
        num_cpus=d.actor_cpus,
    )
    ds = ds.map_batches(
        MlmFeaturizer,
        fn_constructor_kwargs={
            "source": settings["mlm_source"],
            "window": settings["feature_window"],
            "torch_threads": d.torch_threads,
        },
        batch_size=d.feature_batch_size,
        compute=ray.data.ActorPoolStrategy(size=actors),
        num_cpus=d.actor_cpus,
    )
    out = sorted(ds.select_columns(["row", "tags", "mlm"]).take_all(), key=lambda r: r["row"])
    return np.stack([r["mlm"] for r in out]), np.stack([r["tags"] for r in out])


def _model_features_local(rows: list[dict], settings: dict, d) -> tuple[np.ndarray, np.ndarray]:
    import spacy
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from hades_ray.detect.spans import rows_to_items

    items = rows_to_items({k: [r[k] for r in rows] for k in ("text", "start", "end")})
    nlp = spacy.load(settings["spacy_model"], exclude=["lemmatizer"])
    tokenizer = AutoTokenizer.from_pretrained(settings["mlm_source"])
    model = AutoModelForMaskedLM.from_pretrained(settings["mlm_source"]).eval()
    step = d.feature_batch_size
    mlm = [
        mlm_span_features(model, tokenizer, items[i : i + step], settings["feature_window"])
        for i in range(0, len(items), step)
    ]
    return np.concatenate(mlm), tag_spans(nlp, items)


def feature_matrix(
    instances: list[Instance], lexical: LexicalStats, settings: dict, d, use_ray: bool = True
) -> np.ndarray:
    """``[n, len(FEATURE_NAMES)]`` span features in ``FEATURE_NAMES`` order."""
    if not instances:
        return np.zeros((0, len(FEATURE_NAMES)))
    rows = to_rows(instances)
    compute = _model_features_ray if use_ray else _model_features_local
    mlm, tags = compute(rows, settings, d)
    corpus = np.array([lexical.features(i.words, i.start, i.end) for i in instances])
    return np.hstack([mlm, corpus, tags]).astype(np.float64)
