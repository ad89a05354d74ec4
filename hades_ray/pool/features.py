"""Model-free features of every pool instance, as pipeline stages computed once per pool shard.

* ``similarity``: cosine similarity of the encoder's representation (no fine-tuning; pooling a config
  value) of the replacement and of the original span (an actor pool that loads the encoder once);
* ``orig_ent``/``repl_ent``, ``orig_pos``/``repl_pos``, ``orig_lemma``/``repl_lemma``: spaCy on a word
  window around the span, once in the original and once in the perturbed text (an actor pool; the one
  span tagger, ``hades_ray/text/tagging.py``, so an entity type goes by its name here: PER is PERSON).

``hades_ray/pool/feature_job.py`` runs them shard by shard and stores the result beside the pool.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from hades_ray.pipeline.stage import Resources, Stage, setup_torch
from hades_ray.text.tagging import tag_text_spans
from hades_ray.text.words import join_words
from hades_ray.pool.records import original_span_words, original_words
from hades_ray.text.languages import Language

FEATURE_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("doc_id", pa.string()),
        ("similarity", pa.float32()),
        ("orig_ent", pa.string()),
        ("repl_ent", pa.string()),
        ("orig_pos", pa.string()),
        ("repl_pos", pa.string()),
        ("orig_lemma", pa.string()),
        ("repl_lemma", pa.string()),
    ]
)


def window_text(words: list[str], start: int, end: int, context: int, language: Language) -> tuple[str, int, int]:
    """The words ``start-context .. end+context`` joined as ``language`` is written (by spaces, or without
    them in Chinese, Japanese and Thai), and the span's char offsets in it."""
    lo, hi = max(0, start - context), min(len(words), end + 1 + context)
    before = join_words(words[lo:start], language)
    span = join_words(words[start : end + 1], language)
    separator = len(join_words(["", ""], language))
    char_start = len(before) + (separator if before else 0)
    return join_words(words[lo:hi], language), char_start, char_start + len(span)


def span_windows(row: dict, context: int, language: Language) -> tuple[tuple[str, int, int], tuple[str, int, int]]:
    """(original window, perturbed window) of one instance in ``language``, each with the span's char offsets."""
    n_orig = max(len(original_span_words(row, language)), 1)
    original = window_text(original_words(row, language), row["start"], row["start"] + n_orig - 1, context, language)
    return original, window_text(list(row["words"]), row["start"], row["end"], context, language)


def encode(tokenizer, model, texts: list[str], pooling: str) -> np.ndarray:
    import torch

    batch = tokenizer(texts, padding=True, truncation=True, max_length=128, return_tensors="pt")
    batch = {k: v.to(model.device) for k, v in batch.items()}
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    if pooling == "cls":
        vectors = hidden[:, 0]
    else:
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        vectors = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
    return torch.nn.functional.normalize(vectors.float(), dim=-1).cpu().numpy()


def cosine_similarities(tokenizer, model, a: list[str], b: list[str], pooling: str) -> np.ndarray:
    """Row-wise cosine similarity of ``a[i]`` and ``b[i]`` under the encoder."""
    return (encode(tokenizer, model, a, pooling) * encode(tokenizer, model, b, pooling)).sum(-1)


class SpanWindowsStage(Stage):
    """CPU: the texts the encoder and spaCy see, from each instance's words (a stateless task)."""

    name = "span_windows"
    inputs = {"words": pa.list_(pa.string()), "start": pa.int32(), "end": pa.int32(), "original_span": pa.string()}
    outputs = {"sim_orig": pa.string(), "sim_repl": pa.string()}
    for _side in ("orig", "repl"):
        outputs |= {f"ner_{_side}_text": pa.string(), f"ner_{_side}_start": pa.int32(), f"ner_{_side}_end": pa.int32()}
    drops = ("words",)

    def __init__(self, resources: Resources, paraphrase_context: int, ner_context: int, language: Language):
        super().__init__(resources)
        self.paraphrase_context, self.ner_context, self.language = paraphrase_context, ner_context, language

    def process(self, batch: pa.Table) -> dict[str, list]:
        out: dict[str, list] = {name: [] for name in self.outputs}
        for row in batch.select(list(self.inputs)).to_pylist():
            sim_orig, sim_repl = span_windows(row, self.paraphrase_context, self.language)
            out["sim_orig"].append(sim_orig[0])
            out["sim_repl"].append(sim_repl[0])
            for side, (text, start, end) in zip(("orig", "repl"), span_windows(row, self.ner_context, self.language)):
                out[f"ner_{side}_text"].append(text)
                out[f"ner_{side}_start"].append(start)
                out[f"ner_{side}_end"].append(end)
        return out


class SimilarityStage(Stage):
    """Model: the encoder's cosine similarity of original and replaced window (loaded once per actor)."""

    name = "similarity"
    inputs = {"sim_orig": pa.string(), "sim_repl": pa.string()}
    outputs = {"similarity": pa.float32()}
    drops = ("sim_orig", "sim_repl")

    def __init__(self, resources: Resources, encoder: str, pooling: str):
        super().__init__(resources)
        self.encoder, self.pooling = encoder, pooling

    def setup(self) -> None:
        from hades_ray.models.registry import load_encoder

        self.tokenizer, self.model = load_encoder(self.encoder, setup_torch(self.resources))

    def process(self, batch: pa.Table) -> dict[str, np.ndarray]:
        a, b = batch.column("sim_orig").to_pylist(), batch.column("sim_repl").to_pylist()
        return {"similarity": cosine_similarities(self.tokenizer, self.model, a, b, self.pooling).astype(np.float32)}


class LinguisticsStage(Stage):
    """spaCy NER type, POS and lemmas of the span in both windows (the pipeline loaded once per actor)."""

    name = "linguistics"
    inputs = {
        f"ner_{side}_{k}": pa.string() if k == "text" else pa.int32()
        for side in ("orig", "repl")
        for k in ("text", "start", "end")
    }
    outputs = {f"{side}_{k}": pa.string() for side in ("orig", "repl") for k in ("ent", "pos", "lemma")}
    drops = tuple(f"ner_{side}_{k}" for side in ("orig", "repl") for k in ("text", "start", "end"))

    def __init__(self, resources: Resources, spacy_model: str, language: Language):
        super().__init__(resources)
        self.spacy_model, self.language = spacy_model, language

    def setup(self) -> None:
        from hades_ray.text.pipeline import load_pipeline

        self.nlp = load_pipeline(self.language, self.spacy_model)

    def process(self, batch: pa.Table) -> dict[str, list]:
        out: dict[str, list] = {name: [] for name in self.outputs}
        for side in ("orig", "repl"):
            texts = batch.column(f"ner_{side}_text").to_pylist()
            starts, ends = batch.column(f"ner_{side}_start").to_pylist(), batch.column(f"ner_{side}_end").to_pylist()
            for tags in tag_text_spans(self.nlp, texts, list(zip(starts, ends))):
                out[f"{side}_ent"].append(tags.entity)
                out[f"{side}_pos"].append(tags.root_pos)
                out[f"{side}_lemma"].append(tags.lemma)
        return out


def feature_stages(config) -> list[Stage]:
    """The ordered feature stages with the resources the ``select`` section gives them."""
    sel = config.select
    actors = sel.feature_concurrency
    windows = Resources(num_cpus=0.25, batch_size=1024, uses_actors=False)
    similarity = Resources(
        num_cpus=sel.similarity_num_cpus,
        num_gpus=sel.similarity_num_gpus,
        max_actors=actors,
        batch_size=sel.similarity_batch_size,
    )
    linguistics = Resources(num_cpus=sel.spacy_num_cpus, max_actors=actors, batch_size=sel.spacy_batch_size)
    return [
        SpanWindowsStage(windows, sel.paraphrase_context_words, sel.ner_context_words, config.lang),
        SimilarityStage(similarity, config.models.encoder, sel.pooling_for(config.models.encoder)),
        LinguisticsStage(linguistics, config.spacy_model, config.lang),
    ]
