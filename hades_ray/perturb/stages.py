"""The perturbation stages as batch functions over dicts of columns, and the Ray Data actors that
load their model once and call them.

Rows carry ``status`` ("ok" or the reason a text was set aside) and a JSON ``payload``; rows that are
not "ok" pass through the model stages untouched, so every input row reaches the writer exactly once.
"""

from __future__ import annotations

import json
import time

import numpy as np

from hades_ray.config import HadesConfig, StageResources, config_from_dict
from hades_ray.perturb.annotate import load_spacy, mask_units, stop_words
from hades_ray.perturb.mask import align_units, choose_spans, tokenize_for_mask
from hades_ray.perturb.rank import encode_for_perplexity, most_fluent, perplexities
from hades_ray.perturb.replace import MaskedSequence, fill_masks, vocabulary_bans
from hades_ray.perturb.seeding import candidate_rng
from hades_ray.perturb.segment import reject_reason
from hades_ray.perturb.spans import apply_replacements, decode_replacement

REPLACE_STREAM = 1


def _rows(batch: dict) -> list[dict]:
    columns = {k: list(v) for k, v in batch.items()}
    return [dict(zip(columns, values)) for values in zip(*columns.values())]


def _columns(rows: list[dict]) -> dict:
    return {key: np.array([row[key] for row in rows], dtype=object) for key in rows[0]} if rows else {}


def _timed(rows: list[dict], column: str, started: float) -> None:
    share = (time.perf_counter() - started) / max(len(rows), 1)
    for row in rows:
        row[column] = float(row.get(column) or 0.0) + share


# ---- prepare: spaCy analysis and MASK (CPU) -------------------------------------------------------


def prepare_rows(rows: list[dict], nlp, tokenizer, config: HadesConfig) -> list[dict]:
    """Validate each text, find its maskable units and choose every candidate's masked spans."""
    read, mask = config.perturb.read, config.perturb.mask
    stops = stop_words(mask.stopwords)
    for row in rows:
        row["status"] = row.get("reject") or reject_reason(row["text"], read)
        row["payload"] = ""
    todo = [row for row in rows if not row["status"]]
    for row, doc in zip(todo, nlp.pipe([row["text"] for row in todo])):
        if len(list(doc.sents)) < read.min_sentences:
            row["status"] = "too_short"
            continue
        input_ids, offsets = tokenize_for_mask(tokenizer, row["text"], config.perturb.replace.max_length)
        units = align_units(mask_units(doc, mask, stops), offsets, mask)
        if not units:
            row["status"] = "no_maskable_words"
            continue
        candidates = [
            choose_spans(units, mask, config.seed, row["doc_id"], c) for c in range(config.perturb.rank.num_candidates)
        ]
        row["status"] = "ok"
        row["payload"] = json.dumps({"input_ids": input_ids, "units": units, "candidates": candidates})
    return rows


# ---- replace: the masked LM fills every candidate -------------------------------------------------


def _masked_sequences(row: dict, payload: dict, mask_id: int, seed: int) -> list[MaskedSequence]:
    sequences = []
    for candidate, chosen in enumerate(payload["candidates"]):
        ids = list(payload["input_ids"])
        positions, originals, starts = [], [], set()
        for unit_index in chosen:
            unit = payload["units"][unit_index]
            starts.add(unit["token_start"])
            for position in range(unit["token_start"], unit["token_end"]):
                positions.append(position)
                originals.append(ids[position])
                ids[position] = mask_id
        rng = candidate_rng(seed, row["doc_id"], candidate, REPLACE_STREAM)
        sequences.append(MaskedSequence(ids, positions, originals, frozenset(starts), rng))
    return sequences


def _candidate_text(row: dict, payload: dict, chosen: list[int], fills: list[int], tokenizer) -> dict:
    spans, cursor = [], 0
    for unit_index in chosen:
        unit = payload["units"][unit_index]
        width = unit["token_end"] - unit["token_start"]
        original = row["text"][unit["start"] : unit["end"]]
        replacement = decode_replacement(tokenizer, fills[cursor : cursor + width], original)
        cursor += width
        spans.append(
            {
                "orig_start": unit["start"],
                "orig_end": unit["end"],
                "replacement": replacement,
                "ner": unit["ner"],
                "pos": unit["pos"],
            }
        )
    perturbed, placed = apply_replacements(row["text"], spans)
    return {"perturbed": perturbed, "spans": placed}


def replace_rows(rows: list[dict], model, tokenizer, bans, config: HadesConfig, timings: dict) -> list[dict]:
    """Fill all candidates of all "ok" rows in one left-to-right pass; payload becomes the candidates."""
    todo = [row for row in rows if row["status"] == "ok"]
    payloads = [json.loads(row["payload"]) for row in todo]
    sequences, owners = [], []
    for row, payload in zip(todo, payloads):
        for candidate, seq in enumerate(_masked_sequences(row, payload, tokenizer.mask_token_id, config.seed)):
            sequences.append(seq)
            owners.append((row, payload, candidate))
    if not sequences:
        return rows
    order = sorted(range(len(sequences)), key=lambda i: len(sequences[i].input_ids))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    fills = fill_masks(model, [sequences[i] for i in order], config.perturb.replace, bans, pad, timings=timings)
    by_row: dict[int, list] = {id(row): [None] * len(payload["candidates"]) for row, payload in zip(todo, payloads)}
    for slot, index in enumerate(order):
        row, payload, candidate = owners[index]
        chosen = payload["candidates"][candidate]
        by_row[id(row)][candidate] = _candidate_text(row, payload, chosen, fills[slot], tokenizer)
    for row in todo:
        row["payload"] = json.dumps({"candidates": by_row[id(row)]})
    return rows


# ---- rank: perplexity under the causal LM ---------------------------------------------------------


def context_limit(model, configured: int) -> int:
    """The configured length, capped by the model's positions (a small GPT-2 may have only 256)."""
    positions = getattr(model.config, "n_positions", None) or getattr(model.config, "max_position_embeddings", None)
    return min(configured, positions) if positions else configured


def rank_rows(rows: list[dict], model, tokenizer, config: HadesConfig, max_length: int | None = None) -> list[dict]:
    """Score every candidate; the payload becomes the most fluent one plus all perplexities."""
    todo = [row for row in rows if row["status"] == "ok"]
    candidates = [json.loads(row["payload"])["candidates"] for row in todo]
    texts = [c["perturbed"] for group in candidates for c in group]
    if not texts:
        return rows
    ids = encode_for_perplexity(tokenizer, texts, max_length or context_limit(model, config.perturb.rank.max_length))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)
    scores = perplexities(model, ids, pad)
    cursor = 0
    for row, group in zip(todo, candidates):
        ppls = scores[cursor : cursor + len(group)]
        cursor += len(group)
        best = most_fluent(ppls)
        row["payload"] = json.dumps({**group[best], "candidate": best, "ppl": ppls[best], "candidate_ppls": ppls})
    return rows


# ---- actors ---------------------------------------------------------------------------------------


def _setup_torch(resources: StageResources) -> str:
    import torch

    torch.set_num_threads(max(1, resources.torch_threads))
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass  # already set in this reused worker process
    return "cuda" if resources.num_gpus > 0 and torch.cuda.is_available() else "cpu"


class DocumentPreparer:
    """CPU stage: spaCy and the MLM's tokenizer, loaded once per actor."""

    def __init__(self, config: dict):
        from transformers import AutoTokenizer

        from hades_ray.models.registry import resolve_model

        self.config = config_from_dict(config)
        self.nlp = load_spacy(self.config.spacy_model)
        self.tokenizer = AutoTokenizer.from_pretrained(resolve_model(self.config.models.mlm))

    def __call__(self, batch: dict) -> dict:
        started = time.perf_counter()
        rows = prepare_rows(_rows(batch), self.nlp, self.tokenizer, self.config)
        _timed(rows, "t_prepare", started)
        return _columns(rows)


class MaskFiller:
    """Model stage: the masked LM, loaded once per actor."""

    def __init__(self, config: dict):
        from hades_ray.models.registry import load_masked_lm

        self.config = config_from_dict(config)
        device = _setup_torch(self.config.perturb.resources.replace)
        replace = self.config.perturb.replace
        self.tokenizer, self.model = load_masked_lm(self.config.models.mlm, device, replace.dtype)
        stops = None if replace.allow_stopwords else stop_words(self.config.perturb.mask.stopwords)
        self.bans = vocabulary_bans(self.tokenizer, self.model.config.vocab_size, stops)

    def __call__(self, batch: dict) -> dict:
        started = time.perf_counter()
        timings = {"forward": 0.0}
        rows = replace_rows(_rows(batch), self.model, self.tokenizer, self.bans, self.config, timings)
        _timed(rows, "t_replace", started)
        for row in rows:
            row["t_replace_forward"] = timings["forward"] / max(len(rows), 1)
        return _columns(rows)


class PerplexityRanker:
    """Model stage: the causal LM, loaded once per actor."""

    def __init__(self, config: dict):
        from hades_ray.models.registry import load_causal_lm

        self.config = config_from_dict(config)
        device = _setup_torch(self.config.perturb.resources.rank)
        self.tokenizer, self.model = load_causal_lm(
            self.config.models.causal_lm, device, self.config.perturb.rank.dtype
        )
        self.max_length = context_limit(self.model, self.config.perturb.rank.max_length)

    def __call__(self, batch: dict) -> dict:
        started = time.perf_counter()
        rows = rank_rows(_rows(batch), self.model, self.tokenizer, self.config, self.max_length)
        _timed(rows, "t_rank", started)
        return _columns(rows)
