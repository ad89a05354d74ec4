"""spaCy per language: the tokenizer that cuts words, and the pipeline that finds sentences and entities.

``spacy_model`` (a config key, replaceable per language under ``languages.LANG``) names the pipeline:
- ``auto``: the language's trained pipeline (``languages.py``; spaCy's small English one is installed
  with hades_ray), or the multilingual ``xx_ent_wiki_sm`` where the language has none;
- ``blank``: the language's tokenizer and a sentence splitter, and no named entities (every unit is a word);
- a pipeline's package name or folder. A multilingual (``xx``) pipeline lends its entity recogniser to the
  language's own tokenizer, so words are still cut the language's way.
Whatever is missing is a one-line error that says what to install; English is never put in its place.
"""

from __future__ import annotations

import functools
import logging
from functools import lru_cache
from pathlib import Path

from hades_ray.errors import UserError
from hades_ray.text.languages import AUTO, BLANK, Language, entity_names, known_entity_labels, language

# spaCy's sentencizer ends sentences at its own list (., !, ?, 。, ！, ？, ।, ॥, ؟, ۔ and more); these
# full-width and Devanagari marks are named again so the list in use is written down here.
SENTENCE_ENDS = (".", "!", "?", "。", "！", "？", "।", "॥", "؟", "۔", "։", "።", "…")
SENTENCE_SETTERS = ("parser", "senter", "sentencizer")
# A language's own sentence ends (Thai's space) and its number stops (Arabic's "1938.") are its
# ``Language`` fields (``sentence_ends``, ``splits_number_stops``, text/languages.py).
NUMBER_STOP = r"(?<=[0-9\u0660-\u0669\u06f0-\u06f9])\."


class LanguageSupportError(UserError):
    """What a language needs (a segmenter, a spaCy pipeline) is not installed; the message says what to install."""


def _segmenter_missing(lang: Language, error: Exception) -> LanguageSupportError:
    seg = lang.segmenter
    system = f", and {seg.system}" if seg and seg.system else ""
    what = f"{' '.join(seg.packages)}: pip install 'hades_ray[{seg.extra}]'{system}" if seg else "its tokenizer"
    detail = " ".join(str(error).split())[:160]
    return LanguageSupportError(f"language {lang.name}: spaCy's tokenizer needs {what} ({detail})")


def _per_language(maxsize: int):
    """An ``lru_cache`` keyed by the ``Language`` (a name given is looked up first), so ``"de"`` and
    ``language("de")`` share one pipeline; ``cache_clear`` clears it."""

    def wrap(load):
        cached = lru_cache(maxsize=maxsize)(load)

        @functools.wraps(load)
        def call(lang: Language | str, *args, **kwargs):
            return cached(language(lang), *args, **kwargs)

        call.cache_clear = cached.cache_clear
        return call

    return wrap


@_per_language(maxsize=8)
def blank_pipeline(lang: Language):
    """spaCy's blank pipeline of language ``lang`` with its segmenter, and a sentence splitter."""

    nlp = _blank(lang)
    nlp.add_pipe("sentencizer", config={"punct_chars": list(_sentence_ends(lang))})
    return nlp


def _blank(lang: Language):
    """spaCy's blank pipeline of ``lang`` with its segmenter; a missing segmenter is a one-line error."""
    import spacy

    tokenizer = lang.segmenter.tokenizer if lang.segmenter else {}
    try:
        _quiet_segmenter(lang)
        nlp = spacy.blank(lang.spacy, config={"nlp": {"tokenizer": tokenizer}} if tokenizer else {})
    except (ImportError, ValueError, OSError, RuntimeError) as error:
        raise _segmenter_missing(lang, error) from None
    _split_number_stops(lang, nlp)
    return nlp


def _quiet_segmenter(lang: Language) -> None:
    if lang.segmenter and lang.segmenter.module == "jieba":
        import jieba  # its dictionary loads on first use and logs each step: keep that out of job logs

        jieba.setLogLevel(logging.WARNING)


def _split_number_stops(lang: Language, nlp) -> None:
    if lang.splits_number_stops:
        import spacy.util

        suffixes = [*(nlp.Defaults.suffixes or ()), NUMBER_STOP]
        nlp.tokenizer.suffix_search = spacy.util.compile_suffix_regex(suffixes).search


def _sentence_ends(lang: Language) -> tuple[str, ...]:
    from spacy.pipeline.sentencizer import Sentencizer

    return tuple(dict.fromkeys((*Sentencizer.default_punct_chars, *SENTENCE_ENDS, *lang.sentence_ends)))


def word_tokenizer(lang: Language | str):
    """The tokenizer of language ``lang`` (a callable text -> spaCy ``Doc``, words only)."""
    return blank_pipeline(lang).tokenizer


def resolve_pipeline_name(lang: Language | str, spacy_model: str) -> str:
    """The pipeline ``spacy_model`` means for language ``lang``: ``auto`` resolved (the pipeline installed
    with hades_ray where the language has one, else its trained one), others as given."""
    if spacy_model != AUTO:
        return spacy_model
    lang = language(lang)
    if lang.offline_ner and _installed(lang.offline_ner):
        return lang.offline_ner
    return lang.ner


def _installed(pipeline: str) -> bool:
    import spacy.util

    return Path(pipeline).expanduser().is_dir() or spacy.util.is_package(pipeline)


def _not_installed(lang: Language, pipeline: str) -> LanguageSupportError:
    return LanguageSupportError(
        f"language {lang.name}: spaCy pipeline {pipeline!r} is not installed: run `python -m spacy download "
        f"{pipeline}`, or set languages.{lang.name}.spacy_model to another pipeline (a name, a folder, "
        f"xx_ent_wiki_sm) or to blank (no named entities)"
    )


@_per_language(maxsize=4)
def load_pipeline(lang: Language, spacy_model: str = AUTO):
    """The spaCy pipeline for language ``lang`` (a ``Language`` or its name) that ``spacy_model`` names (see
    the module's docstring), with sentence boundaries; loaded once per process."""
    import spacy

    pipeline = resolve_pipeline_name(lang, spacy_model)
    if pipeline == BLANK:
        return blank_pipeline(lang)
    if not _installed(pipeline):
        raise _not_installed(lang, pipeline)
    try:
        _quiet_segmenter(lang)
        nlp = spacy.load(pipeline)
    except ImportError as error:  # a pipeline's tokenizer needs the language's segmenter
        raise _segmenter_missing(lang, error) from None
    if nlp.lang == "xx" and lang.spacy != "xx":
        nlp = _with_language_tokenizer(lang, nlp)
    elif nlp.lang != lang.spacy:
        raise LanguageSupportError(
            f"language {lang.name}: spaCy pipeline {pipeline!r} is for language {nlp.lang!r}, not {lang.spacy!r}; "
            f"set languages.{lang.name}.spacy_model to a {lang.spacy} or multilingual (xx) pipeline, or to blank"
        )
    else:
        _split_number_stops(lang, nlp)  # a trained pipeline cuts words as the blank one does
    if not any(step in nlp.pipe_names for step in SENTENCE_SETTERS):
        nlp.add_pipe("sentencizer", first=True, config={"punct_chars": list(_sentence_ends(lang))})
    return nlp


def _with_language_tokenizer(lang: Language, multilingual):
    """A multilingual pipeline's entity recognisers behind language ``lang``'s own tokenizer."""
    nlp = _blank(lang)
    for component in multilingual.pipe_names:
        sourced = nlp.add_pipe(component, source=multilingual)
        if hasattr(sourced, "add_patterns") and hasattr(sourced, "patterns"):
            # an entity ruler turned its phrase patterns into Docs with the xx tokenizer; made again with this
            # language's tokenizer, a name the language cuts otherwise ("Kaiser-Wilhelm-Gesellschaft") still matches
            patterns = sourced.patterns
            sourced.nlp = nlp
            sourced.clear()
            sourced.add_patterns(patterns)
    return nlp


def entity_source(lang: Language | str, spacy_model: str = AUTO) -> str:
    """Where a language's entities come from, for summaries: a pipeline name, or ``none`` for blank."""
    pipeline = resolve_pipeline_name(lang, spacy_model)
    return "none" if pipeline == BLANK else pipeline


# The components whose labels are entity labels, by spaCy's default names (a pipeline's meta.json lists
# every component's labels: the tagger's and the parser's too).
ENTITY_COMPONENTS = ("ner", "entity_ruler")


def entity_labels(lang: Language | str, spacy_model: str = AUTO) -> tuple[str, ...] | None:
    """The entity types the pipeline ``spacy_model`` means for ``lang`` labels, by the names they go by
    (``PERSON``, not ``PER``; ``languages.entity_name``): none for ``blank``; an installed pipeline's from its
    meta.json, without loading it; else the table's (``languages.known_entity_labels``); None where
    neither says."""
    pipeline = resolve_pipeline_name(lang, spacy_model)
    if pipeline == BLANK:
        return ()
    labels = _meta_entity_labels(pipeline) if _installed(pipeline) else None
    return known_entity_labels(pipeline) if labels is None else entity_names(labels)


def _meta_entity_labels(pipeline: str) -> tuple[str, ...] | None:
    import json

    import spacy.util

    folder = Path(pipeline).expanduser()
    meta = (folder if folder.is_dir() else spacy.util.get_package_path(pipeline)) / "meta.json"
    try:
        labels = json.loads(meta.read_text(encoding="utf-8")).get("labels")
    except (OSError, ValueError):
        return None
    if not isinstance(labels, dict):
        return None
    return tuple(label for component in ENTITY_COMPONENTS for label in labels.get(component, ()))


def text_settings(config) -> dict:
    """The text settings an output depends on, for settings digests and saved detectors: the spaCy pipeline
    (``auto`` resolved) and the language's ``record_fields`` (none for English, so English digests keep the
    values they had before languages came)."""
    lang = config.lang
    return {"spacy_model": resolve_pipeline_name(lang, config.spacy_model), **lang.record_fields()}
