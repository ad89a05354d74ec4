"""The one spaCy span tagger: a language's pipeline over texts or over given words, and per span its words'
part-of-speech tags and entity types (by the names they go by here: ``PER`` is ``PERSON``,
``languages.entity_name``), their lemmas and the POS of the span's root.

Selection tags a word window around each span as the language writes it (``tag_text_spans``: spaCy cuts
the text, and the span's characters are widened to whole tokens); the LR/SVM features tag the instance's
own words (``tag_word_spans``: spaCy's tokens stay the HaDes words). Each reads what it needs from the
same ``SpanTags``. Nothing here imports spaCy at import time.
"""

from __future__ import annotations

from dataclasses import dataclass

from hades_ray.text.languages import entity_name

# The word spans' callers read no lemmas; the pipeline is shared, so the step is skipped per call.
SKIPPED_FOR_WORDS = ("lemmatizer",)


@dataclass(frozen=True)
class SpanTags:
    """What spaCy says of one span's words."""

    pos: tuple[str, ...] = ()  # each word's coarse POS (Universal Dependencies)
    entities: tuple[str, ...] = ()  # each word's entity type by its name here, "" outside an entity
    lemmas: tuple[str, ...] = ()  # lower-cased; a word stands for itself where the pipeline has no lemmatizer
    root_pos: str = ""

    @property
    def entity(self) -> str:
        """The first entity type among the span's words, "" where none is in one."""
        return next((e for e in self.entities if e), "")

    @property
    def lemma(self) -> str:
        return " ".join(self.lemmas)


def span_tags(span) -> SpanTags:
    """The ``SpanTags`` of a spaCy ``Span`` (an empty one, or None, has none)."""
    if span is None or len(span) == 0:
        return SpanTags()
    return SpanTags(
        pos=tuple(t.pos_ for t in span),
        entities=tuple(entity_name(t.ent_type_) for t in span),
        # A pipeline without a lemmatizer (blank, multilingual, Chinese) leaves lemmas empty: the word stands
        # for itself, or every replacement would keep "the original's lemmas" (annotate/simulate.py).
        lemmas=tuple((t.lemma_ or t.text).lower() for t in span),
        root_pos=span.root.pos_,
    )


def tag_text_spans(nlp, texts: list[str], spans: list[tuple[int, int]], batch_size: int = 0) -> list[SpanTags]:
    """Each text's span (character offsets into it, widened to whole tokens) tagged on spaCy's cut of the
    text, ``batch_size`` texts at a time (0: all at once)."""
    docs = nlp.pipe(texts, batch_size=batch_size or len(texts) or 1)
    return [span_tags(doc.char_span(start, end, alignment_mode="expand")) for doc, (start, end) in zip(docs, spans)]


def tag_word_spans(nlp, items: list[dict]) -> list[SpanTags]:
    """Each item's span (``words[start..end]``, ``end`` included) tagged on the given words, not a re-cut
    string, so spaCy's tokens stay aligned with the HaDes words."""
    from spacy.tokens import Doc

    skipped = [step for step in SKIPPED_FOR_WORDS if step in nlp.pipe_names]
    docs = nlp.pipe((Doc(nlp.vocab, words=it["words"]) for it in items), disable=skipped)
    return [span_tags(doc[it["start"] : it["end"] + 1]) for it, doc in zip(items, docs)]
