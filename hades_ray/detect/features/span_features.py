"""Model-based span features of the paper's feature detectors (their stages: ``stages.py``).

* ``mlm_span_features``: the span masked (all its subwords at once), context on both sides; the
  average probability the MLM gives the original subwords and the average entropy at those positions.
* ``tag_spans``: the share of the span's words with each spaCy POS tag and entity type.
"""

from __future__ import annotations

import numpy as np
import torch

from hades_ray.detect.spans import encode_spans

# spaCy's coarse part-of-speech tags (Universal Dependencies) and its English entity types.
UPOS = tuple("ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM VERB X".split())
ENTITY_TYPES = tuple(
    "O CARDINAL DATE EVENT FAC GPE LANGUAGE LAW LOC MONEY NORP ORDINAL ORG PERCENT PERSON PRODUCT QUANTITY TIME"
    " WORK_OF_ART".split()
)
TAG_NAMES = tuple(f"pos_{t}" for t in UPOS) + tuple(f"ner_{t}" for t in ENTITY_TYPES)
# Other pipelines' names for those types (the multilingual xx_ent_wiki_sm's and the German, Russian... ones'
# PER); a type without a column here (MISC) counts as O.
ENTITY_ALIASES = {"PER": "PERSON"}
SKIPPED_STEPS = ("lemmatizer",)  # its lemmas are no feature; the pipeline is shared, so skipped per call


@torch.no_grad()
def mlm_span_features(model, tokenizer, items: list[dict], window: int) -> np.ndarray:
    """``[n, 2]``: average original-subword probability and average entropy over the masked span."""
    enc = encode_spans(tokenizer, items, "offline", window)
    span = enc.pop("span_mask")
    original = enc["input_ids"].clone()
    enc["input_ids"] = enc["input_ids"].masked_fill(span, tokenizer.mask_token_id)
    device = next(model.parameters()).device
    logits = model(**{k: v.to(device) for k, v in enc.items()}).logits.cpu()
    # Only the span's positions, in float64: a float32 entropy summed over a 30k vocabulary carries
    # about 1e-6 of rounding that follows the CPU's reduction order, as much as the spread of a nearly
    # uniform model's entropies from word to word.
    rows, cols = span.nonzero(as_tuple=True)
    logp = torch.log_softmax(logits[rows, cols].double(), dim=-1)
    p_orig = logp.gather(-1, original[rows, cols].unsqueeze(-1)).squeeze(-1).exp()
    entropy = -(logp.exp() * logp).sum(-1)
    sums = torch.zeros(span.shape[0], 2, dtype=torch.float64).index_add_(0, rows, torch.stack([p_orig, entropy], 1))
    return (sums / span.sum(1).clamp(min=1).unsqueeze(1)).numpy()


def tag_spans(nlp, items: list[dict]) -> np.ndarray:
    """``[n, len(TAG_NAMES)]``: per span, the share of its words with each POS tag and entity type."""
    from spacy.tokens import Doc

    out = np.zeros((len(items), len(TAG_NAMES)), dtype=np.float32)
    pos_index = {t: i for i, t in enumerate(UPOS)}
    ent_index = {t: len(UPOS) + i for i, t in enumerate(ENTITY_TYPES)}
    # Tagging the given words (not a re-tokenized string) keeps spaCy's tokens aligned with HaDes words.
    skipped = [step for step in SKIPPED_STEPS if step in nlp.pipe_names]
    docs = nlp.pipe((Doc(nlp.vocab, words=it["words"]) for it in items), disable=skipped)
    for row, (item, doc) in enumerate(zip(items, docs)):
        span = doc[item["start"] : item["end"] + 1]
        for token in span:
            entity = ENTITY_ALIASES.get(token.ent_type_, token.ent_type_) or "O"
            out[row, pos_index.get(token.pos_, pos_index["X"])] += 1
            out[row, ent_index.get(entity, ent_index["O"])] += 1
        out[row] /= max(len(span), 1)
    return out
