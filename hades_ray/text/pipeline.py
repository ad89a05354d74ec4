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

import logging
from functools import lru_cache
from pathlib import Path

from hades_ray.errors import UserError
from hades_ray.text.languages import AUTO, BLANK, ENGLISH_OFFLINE, Language, language

# spaCy's sentencizer ends sentences at its own list (., !, ?, 。, ！, ？, ।, ॥, ؟, ۔ and more); these
# full-width and Devanagari marks are named again so the list in use is written down here.
SENTENCE_ENDS = (".", "!", "?", "。", "！", "？", "।", "॥", "؟", "۔", "։", "።", "…")
SENTENCE_SETTERS = ("parser", "senter", "sentencizer")
# Thai ends a sentence with a space, not a mark (PyThaiNLP's "whitespace" sentence splitter does the same);
# its tokenizer makes that space a token of its own. (A space also ends some clauses: more, shorter sentences.)
LANGUAGE_SENTENCE_ENDS = {"th": (" ",)}
# spaCy's Arabic and Persian tokenizers keep a number and the full stop after it as one token ("1938."), so a
# sentence that ends with a year never ends; these scripts write no ordinals that way, so the stop is split off.
# (German, Turkish, Hungarian, Norwegian, Slovene and Serbian keep "3." whole on purpose: it is an ordinal.)
NUMBER_STOP_SPLIT = frozenset({"ar", "fa"})
NUMBER_STOP = r"(?<=[0-9\u0660-\u0669\u06f0-\u06f9])\."


class LanguageSupportError(UserError):
    """What a language needs (a segmenter, a spaCy pipeline) is not installed; the message says what to install."""


def _segmenter_missing(lang: Language, error: Exception) -> LanguageSupportError:
    seg = lang.segmenter
    system = f", and {seg.system}" if seg and seg.system else ""
    what = f"{' '.join(seg.packages)}: pip install 'hades_ray[{seg.extra}]'{system}" if seg else "its tokenizer"
    detail = " ".join(str(error).split())[:160]
    return LanguageSupportError(f"language {lang.name}: spaCy's tokenizer needs {what} ({detail})")


@lru_cache(maxsize=8)
def blank_pipeline(name: str):
    """spaCy's blank pipeline of language ``name`` with its segmenter, and a sentence splitter."""

    nlp = _blank(language(name))
    nlp.add_pipe("sentencizer", config={"punct_chars": list(_sentence_ends(name))})
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
    if lang.spacy in NUMBER_STOP_SPLIT:
        import spacy.util

        suffixes = [*(nlp.Defaults.suffixes or ()), NUMBER_STOP]
        nlp.tokenizer.suffix_search = spacy.util.compile_suffix_regex(suffixes).search


@lru_cache(maxsize=8)
def _sentence_ends(name: str) -> tuple[str, ...]:
    from spacy.pipeline.sentencizer import Sentencizer

    own = LANGUAGE_SENTENCE_ENDS.get(language(name).spacy, ())
    return tuple(dict.fromkeys((*Sentencizer.default_punct_chars, *SENTENCE_ENDS, *own)))


def word_tokenizer(name: str):
    """The tokenizer of language ``name`` (a callable text -> spaCy ``Doc``, words only)."""
    return blank_pipeline(name).tokenizer


def resolve_pipeline_name(name: str, spacy_model: str) -> str:
    """The pipeline ``spacy_model`` means for language ``name``: ``auto`` resolved, others as given."""
    if spacy_model != AUTO:
        return spacy_model
    lang = language(name)
    if lang.name == "en":
        return ENGLISH_OFFLINE if _installed(ENGLISH_OFFLINE) else lang.ner
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


@lru_cache(maxsize=4)
def load_pipeline(name: str, spacy_model: str = AUTO):
    """The spaCy pipeline for language ``name`` that ``spacy_model`` names (see the module's docstring),
    with sentence boundaries; loaded once per process."""
    import spacy

    lang = language(name)
    pipeline = resolve_pipeline_name(name, spacy_model)
    if pipeline == BLANK:
        return blank_pipeline(name)
    if not _installed(pipeline):
        raise _not_installed(lang, pipeline)
    try:
        _quiet_segmenter(lang)
        nlp = spacy.load(pipeline)
    except ImportError as error:  # a pipeline's tokenizer needs the language's segmenter
        raise _segmenter_missing(lang, error) from None
    if nlp.lang == "xx" and lang.spacy != "xx":
        nlp = _with_language_tokenizer(name, nlp)
    elif nlp.lang != lang.spacy:
        raise LanguageSupportError(
            f"language {lang.name}: spaCy pipeline {pipeline!r} is for language {nlp.lang!r}, not {lang.spacy!r}; "
            f"set languages.{lang.name}.spacy_model to a {lang.spacy} or multilingual (xx) pipeline, or to blank"
        )
    else:
        _split_number_stops(lang, nlp)  # a trained pipeline cuts words as the blank one does
    if not any(step in nlp.pipe_names for step in SENTENCE_SETTERS):
        nlp.add_pipe("sentencizer", first=True, config={"punct_chars": list(_sentence_ends(name))})
    return nlp


def _with_language_tokenizer(name: str, multilingual):
    """A multilingual pipeline's entity recognisers behind language ``name``'s own tokenizer."""
    nlp = _blank(language(name))
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


def entity_source(name: str, spacy_model: str = AUTO) -> str:
    """Where a language's entities come from, for summaries: a pipeline name, or ``none`` for blank."""
    pipeline = resolve_pipeline_name(name, spacy_model)
    return "none" if pipeline == BLANK else pipeline


def text_settings(config) -> dict:
    """The text settings an output depends on, for settings digests and saved detectors: the spaCy pipeline
    (``auto`` resolved) and, for any language but English, the language (so English digests keep the
    values they had before languages came)."""
    settings = {"spacy_model": resolve_pipeline_name(config.language, config.spacy_model)}
    return settings if config.language == "en" else {**settings, "language": config.language}
