"""Model-based span features of the paper's feature detectors (their stages: ``stages.py``).

* ``mlm_span_features``: the span masked (all its subwords at once), context on both sides; the
  average probability the MLM gives the original subwords and the average entropy at those positions.
* ``tag_spans``: the share of the span's words with each spaCy POS tag and entity type (the one span
  tagger, ``hades_ray/text/tagging.py``).
"""

from __future__ import annotations

import numpy as np
import torch

from hades_ray.detect.spans import encode_spans
from hades_ray.text.languages import ENTITY_NAMES
from hades_ray.text.tagging import tag_word_spans

# spaCy's coarse part-of-speech tags (Universal Dependencies) and the entity types by the names they go by
# (spaCy's English ones; another pipeline's PER is a PERSON, text/languages.py). A type without a column
# here (WikiNER's MISC) counts as O.
UPOS = tuple("ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM VERB X".split())
ENTITY_TYPES = ("O", *ENTITY_NAMES)
TAG_NAMES = tuple(f"pos_{t}" for t in UPOS) + tuple(f"ner_{t}" for t in ENTITY_TYPES)


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
    out = np.zeros((len(items), len(TAG_NAMES)), dtype=np.float32)
    pos_index = {t: i for i, t in enumerate(UPOS)}
    ent_index = {t: len(UPOS) + i for i, t in enumerate(ENTITY_TYPES)}
    for row, tags in enumerate(tag_word_spans(nlp, items)):
        for pos, entity in zip(tags.pos, tags.entities):
            out[row, pos_index.get(pos, pos_index["X"])] += 1
            out[row, ent_index.get(entity or "O", ent_index["O"])] += 1
        out[row] /= max(len(tags.pos), 1)
    return out
