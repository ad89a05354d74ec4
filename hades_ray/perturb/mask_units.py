"""The word spans MASK may choose in a kept text, from its spaCy analysis (sentences, entities, tokens).

A unit is one content word, or one whole named entity, from the third sentence on; stop words and
punctuation never are.
"""

from __future__ import annotations

from hades_ray.perturb.settings import MaskConfig


def _is_clitic(text: str) -> bool:
    # "'s", "n't", "'re": spaCy splits them off as tokens; NLTK's list (unlike spaCy's) has no entry
    # for them, yet they are never content words.
    lowered = text.lower().replace("\u2019", "'")
    return lowered.startswith("'") or lowered == "n't"


def _is_content(token, stops: frozenset[str]) -> bool:
    return (
        not token.is_punct
        and not _is_clitic(token.text)
        and not token.is_space
        and any(c.isalnum() for c in token.text)
        and token.text.lower() not in stops
        and token.lemma_.lower() not in stops
    )


def mask_units(doc, config: MaskConfig, stops: frozenset[str]) -> list[dict]:
    """Candidate spans as ``{start, end, ner, pos}`` character ranges, in text order."""
    sentences = list(doc.sents)
    if len(sentences) <= config.context_sentences:
        return []
    region_start = sentences[config.context_sentences].start_char
    units: list[dict] = []
    covered: set[int] = set()
    if config.entity_whole:
        for ent in doc.ents:
            if ent.start_char < region_start or not any(_is_content(t, stops) for t in ent):
                continue
            units.append({"start": ent.start_char, "end": ent.end_char, "ner": ent.label_, "pos": ent.root.pos_})
            covered.update(range(ent.start, ent.end))
    for token in doc:
        if token.idx < region_start or token.i in covered or not _is_content(token, stops):
            continue
        units.append(
            {"start": token.idx, "end": token.idx + len(token.text), "ner": token.ent_type_, "pos": token.pos_}
        )
    units.sort(key=lambda unit: unit["start"])
    return units
