"""The perturbation's steps over rows (dicts of one document's columns), run by ``perturb/stages.py``
and by tests without Ray. Rows whose ``status`` is not "ok" pass through untouched, so every input row
reaches the writer."""

from __future__ import annotations

from collections import defaultdict

from hades_ray.config import HadesConfig
from hades_ray.perturb.mask import align_units, choose_spans, tokenize_for_mask
from hades_ray.perturb.mask_units import mask_units
from hades_ray.perturb.packing import Packing, config_positions, model_positions, packing_of
from hades_ray.perturb.rank import encode_for_perplexity
from hades_ray.perturb.rank_prefix import document_perplexities
from hades_ray.perturb.reject import reject_reason
from hades_ray.perturb.settings import RankConfig
from hades_ray.perturb.replace import MaskedSequence, fill_masks
from hades_ray.perturb.spans import apply_replacements, decode_replacement
from hades_ray.text.seeding import candidate_rng
from hades_ray.text.stopwords import stop_words

REPLACE_STREAM = 1


def _ok(rows: list[dict]) -> list[dict]:
    return [row for row in rows if row["status"] == "ok"]


def prepare_rows(rows: list[dict], nlp, tokenizer, config: HadesConfig) -> list[dict]:
    """Validate each text, find its maskable units and choose every candidate's masked spans."""
    read, mask = config.perturb.read, config.perturb.mask
    lang = config.lang
    stops = stop_words(mask.stopwords, lang)
    for row in rows:
        reason = row.get("reject") or reject_reason(row["text"], read, lang)
        row.update(status=reason, input_ids=[], units=[], chosen=[])
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
        candidates = range(config.perturb.rank.num_candidates)
        row.update(
            status="ok",
            input_ids=input_ids,
            units=units,
            chosen=[choose_spans(units, mask, config.seed, row["doc_id"], c) for c in candidates],
        )
    return rows


def kept_rows(source: str, docs: int, nlp, tokenizer, config: HadesConfig, shard_size: int = 50) -> list[dict]:
    """The first ``docs`` rows of ``source`` that MASK keeps (``prepare_rows`` status "ok"), prepared shard by
    shard in row order until there are enough: the same masks for every REPLACE variant a benchmark runs."""
    from hades_ray.io.readers import plan_shards, read_shard

    kept: list[dict] = []
    for shard in plan_shards(source, shard_size):
        rows = prepare_rows(sorted(read_shard(shard).to_pylist(), key=lambda r: r["row"]), nlp, tokenizer, config)
        kept += [row for row in rows if row["status"] == "ok"]
        if len(kept) >= docs:
            break
    return kept[:docs]


def masked_sequences(row: dict, mask_id: int, seed: int) -> list[MaskedSequence]:
    """One masked copy of the document's tokens per candidate (same length: a span keeps its width)."""
    sequences = []
    for candidate, chosen in enumerate(row["chosen"]):
        ids = list(row["input_ids"])
        positions, originals, starts = [], [], set()
        for unit_index in chosen:
            unit = row["units"][unit_index]
            starts.add(unit["token_start"])
            for position in range(unit["token_start"], unit["token_end"]):
                positions.append(position)
                originals.append(ids[position])
                ids[position] = mask_id
        rng = candidate_rng(seed, row["doc_id"], candidate, REPLACE_STREAM)
        sequences.append(MaskedSequence(ids, positions, originals, frozenset(starts), rng))
    return sequences


def replace_groups(
    rows: list[dict], mask_id: int, seed: int, packing: Packing | None = None
) -> dict[int, list[tuple[dict, int, MaskedSequence]]]:
    """The masked sequences of every candidate of the "ok" rows, grouped by the width they run at
    (their length when packing is exact): each group is one ``fill_masks`` call (the planner in
    ``hades_ray/plan`` counts the same groups)."""
    packing = packing or Packing()
    by_width: dict[int, list[tuple[dict, int, MaskedSequence]]] = defaultdict(list)
    for row in _ok(rows):
        for candidate, seq in enumerate(masked_sequences(row, mask_id, seed)):
            by_width[packing.width(len(seq.input_ids))].append((row, candidate, seq))
    return dict(sorted(by_width.items()))


def replace_rows(rows: list[dict], model, tokenizer, bans, config: HadesConfig, timings: dict) -> list[dict]:
    """Fill all candidates of all "ok" rows; ``row["fills"]`` holds each candidate's chosen token ids.

    Forwards are packed as ``perturb.replace.packing`` says, so that a document's fills do not depend
    on which other documents share its batch (perturb/packing.py)."""
    for row in rows:
        row["fills"] = [None] * len(row["chosen"]) if row["status"] == "ok" else []
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    packing = packing_of(config.perturb.replace, next(model.parameters()).device.type, model_positions(model))
    for group in replace_groups(rows, tokenizer.mask_token_id, config.seed, packing).values():
        fills = fill_masks(model, [seq for _, _, seq in group], config.perturb.replace, bans, pad, timings=timings)
        for (row, candidate, _), chosen in zip(group, fills):
            row["fills"][candidate] = chosen
    return rows


def candidate_text(row: dict, chosen: list[int], fills: list[int], tokenizer) -> tuple[str, list[dict]]:
    """(perturbed text, spans) of one candidate from its fills."""
    spans, cursor = [], 0
    for unit_index in chosen:
        unit = row["units"][unit_index]
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
    return apply_replacements(row["text"], spans)


def assemble_rows(rows: list[dict], mlm_tokenizer, lm_tokenizer, max_length: int) -> list[dict]:
    """Candidate texts and spans from the fills, and their causal-LM token ids."""
    for row in rows:
        row.update(cand_texts=[], cand_spans=[], rank_ids=[])
    for row in _ok(rows):
        made = [candidate_text(row, c, f, mlm_tokenizer) for c, f in zip(row["chosen"], row["fills"])]
        row["cand_texts"] = [text for text, _ in made]
        row["cand_spans"] = [spans for _, spans in made]
        row["rank_ids"] = encode_for_perplexity(lm_tokenizer, row["cand_texts"], max_length)
    return rows


def rank_groups(rows: list[dict]) -> dict[int, list[tuple[dict, int]]]:
    """(row, candidate) of every candidate of the "ok" rows, grouped by causal-LM length (the
    planner in ``hades_ray/plan`` counts RANK's tokens by them)."""
    by_length: dict[int, list[tuple[dict, int]]] = defaultdict(list)
    for row in _ok(rows):
        for candidate, ids in enumerate(row["rank_ids"]):
            by_length[len(ids)].append((row, candidate))
    return dict(sorted(by_length.items()))


def rank_rows(rows: list[dict], model, pad_id: int, config: RankConfig | None = None) -> list[dict]:
    """``row["cand_ppls"]``: the perplexity of every candidate, all candidates of the block packed
    together as ``config.packing`` says, each document's shared prefix once where
    ``config.share_prefix`` says so, so a candidate's perplexity does not depend on the other
    documents in its batch (perturb/packing.py, perturb/rank_prefix.py)."""
    for row in rows:
        row["cand_ppls"] = [None] * len(row["rank_ids"]) if row["status"] == "ok" else []
    scored = _ok(rows)
    for row, scores in zip(scored, document_perplexities(model, [row["rank_ids"] for row in scored], pad_id, config)):
        row["cand_ppls"] = scores
    return rows


def context_limit(model_config, configured: int) -> int:
    """The configured length, capped by the model's positions (a small GPT-2 may have only 256)."""
    positions = config_positions(model_config)
    return min(configured, positions) if positions else configured
