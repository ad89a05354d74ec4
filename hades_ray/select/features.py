"""Model-free scores of every pool instance, computed once per work directory and stored as data.

* ``similarity``: cosine similarity of the encoder's representation (no fine-tuning; pooling a config
  value) of the replacement and of the original span, as a Ray Data actor-pool stage;
* ``orig_ent``/``repl_ent``, ``orig_pos``, ``orig_lemma``/``repl_lemma``: spaCy on a word window around
  the span, once in the original and once in the perturbed text.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from hades_ray.select.workdir import load_pool, original_words, write_json_atomic, write_parquet_atomic

log = logging.getLogger(__name__)
FEATURES = "features/features.parquet"


def window_text(words: list[str], start: int, end: int, context: int) -> tuple[str, int, int]:
    """The words ``start-context .. end+context`` joined by spaces, and the span's char offsets in it."""
    lo, hi = max(0, start - context), min(len(words), end + 1 + context)
    before = " ".join(words[lo:start])
    span = " ".join(words[start : end + 1])
    char_start = len(before) + (1 if before else 0)
    return " ".join(words[lo:hi]), char_start, char_start + len(span)


def span_pairs(frame: pd.DataFrame, context: int) -> tuple[list[str], list[str]]:
    """(original, replaced) texts of each instance: the span alone, or with ``context`` words around it."""
    originals, replaced = [], []
    for _, row in frame.iterrows():
        orig = original_words(row)
        n_orig = len(str(row["original_span"]).split())
        originals.append(window_text(orig, row["start"], row["start"] + max(n_orig, 1) - 1, context)[0])
        replaced.append(window_text(list(row["words"]), row["start"], row["end"], context)[0])
    return originals, replaced


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
    return torch.nn.functional.normalize(vectors, dim=-1).cpu().numpy()


def cosine_similarities(tokenizer, model, a: list[str], b: list[str], pooling: str) -> np.ndarray:
    """Row-wise cosine similarity of ``a[i]`` and ``b[i]`` under the encoder."""
    return (encode(tokenizer, model, a, pooling) * encode(tokenizer, model, b, pooling)).sum(-1)


class SimilarityScorer:
    """Ray Data actor: loads the encoder once, then adds a ``similarity`` column per batch."""

    def __init__(self, encoder: str, pooling: str, torch_threads: int = 1):
        import torch

        from hades_ray.models.registry import load_encoder

        torch.set_num_threads(torch_threads)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:
            pass  # a reused worker process already set it
        self.tokenizer, self.model = load_encoder(encoder)
        self.pooling = pooling

    def __call__(self, batch: dict) -> dict:
        sims = cosine_similarities(
            self.tokenizer, self.model, list(batch["orig_text"]), list(batch["repl_text"]), self.pooling
        )
        return {"id": batch["id"], "similarity": sims.astype("float32")}


def similarity_stage(config, frame: pd.DataFrame) -> pd.DataFrame:
    """Similarities of every row of ``frame`` through a Ray Data actor pool (Ray must be running)."""
    import ray

    sel = config.select
    originals, replaced = span_pairs(frame, sel.paraphrase_context_words)
    table = pd.DataFrame({"id": frame["id"].values, "orig_text": originals, "repl_text": replaced})
    table = table.assign(length=table["repl_text"].str.len()).sort_values("length").drop(columns="length")
    ds = ray.data.from_pandas(table).map_batches(
        SimilarityScorer,
        fn_constructor_args=(config.models.encoder, sel.pooling_for(config.models.encoder)),
        batch_size=sel.similarity_batch_size,
        batch_format="numpy",
        num_cpus=sel.similarity_num_cpus,
        compute=ray.data.ActorPoolStrategy(size=1),
    )
    return ds.to_pandas()


def _span_info(doc, char_start: int, char_end: int) -> dict:
    span = doc.char_span(char_start, char_end, alignment_mode="expand")
    if span is None or len(span) == 0:
        return {"ent": "", "pos": "", "lemma": ""}
    ents = [t.ent_type_ for t in span if t.ent_type_]
    return {"ent": ents[0] if ents else "", "pos": span.root.pos_, "lemma": " ".join(t.lemma_.lower() for t in span)}


def span_linguistics(nlp, frame: pd.DataFrame, context: int) -> pd.DataFrame:
    """NER type, POS and lemmas of each span, in the original and in the perturbed text."""
    orig_windows, repl_windows = [], []
    for _, row in frame.iterrows():
        orig = original_words(row)
        n_orig = max(len(str(row["original_span"]).split()), 1)
        orig_windows.append(window_text(orig, row["start"], row["start"] + n_orig - 1, context))
        repl_windows.append(window_text(list(row["words"]), row["start"], row["end"], context))
    out = {"id": list(frame["id"])}
    for side, windows in (("orig", orig_windows), ("repl", repl_windows)):
        infos = [
            _span_info(doc, s, e) for doc, (_, s, e) in zip(nlp.pipe([w[0] for w in windows], batch_size=64), windows)
        ]
        for key in ("ent", "pos", "lemma"):
            out[f"{side}_{key}"] = [info[key] for info in infos]
    return pd.DataFrame(out)


def _meta(config, n: int) -> dict:
    sel = config.select
    return {
        "encoder": config.models.encoder,
        "pooling": sel.pooling_for(config.models.encoder),
        "paraphrase_context_words": sel.paraphrase_context_words,
        "ner_context_words": sel.ner_context_words,
        "spacy_model": config.spacy_model,
        "instances": n,
    }


def compute_features(config, workdir: str | Path, force: bool = False) -> pd.DataFrame:
    """The features table of the whole pool, read from disk when it was made with the same settings."""
    import spacy

    from hades_ray.ray_runtime import init_ray

    workdir = Path(workdir)
    path, marker = workdir / FEATURES, workdir / "features" / "features.json"
    pool = load_pool(workdir)
    meta = _meta(config, len(pool))
    if not force and path.is_file() and marker.is_file() and json.loads(marker.read_text()) == meta:
        return pd.read_parquet(path)
    log.info("scoring %d pool instances: encoder similarity and spaCy NER/POS", len(pool))
    init_ray(config.ray.address, config.ray.num_cpus)
    sims = similarity_stage(config, pool)
    nlp = spacy.load(config.spacy_model)
    ling = span_linguistics(nlp, pool, config.select.ner_context_words)
    features = pool[["id", "doc_id"]].merge(sims, on="id").merge(ling, on="id")
    write_parquet_atomic(features, path)
    write_json_atomic(marker, meta)  # marker last: a crash before it recomputes
    return features
