"""Stop-word lists, offline. English: NLTK's (the HaDes paper's) by default, spaCy's on request. Every other
Wiki-40B language: spaCy's list for that language (``spacy.lang.XX.stop_words``), which every spaCy
install carries (NLTK's lists for other languages are data that cannot be downloaded offline).

``nltk.download`` cannot run on offline machines and no PyPI package ships NLTK's English list
unchanged (the ``stopwords`` and ``stop-words`` packages carry the ranks.nl list), so the list is
kept here verbatim: the 179 words of ``nltk_data/corpora/stopwords/english`` as NLTK 3.x shipped it
from 2018 until the 2024 update, in the file's order. HaDes (Liu et al., 2022) names NLTK's list.
"""

from __future__ import annotations

from functools import lru_cache

SOURCES = ("nltk", "spacy")

NLTK_ENGLISH = (
    "i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves "
    "he him his himself she she's her hers herself it it's its itself they them their theirs themselves "
    "what which who whom this that that'll these those am is are was were be been being have has had "
    "having do does did doing a an the and but if or because as until while of at by for with about "
    "against between into through during before after above below to from up down in out on off over "
    "under again further then once here there when where why how all any both each few more most other "
    "some such no nor not only own same so than too very s t can will just don don't should should've "
    "now d ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn "
    "hasn't haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn "
    "shouldn't wasn wasn't weren weren't won won't wouldn wouldn't"
).split()


@lru_cache(maxsize=4)
def english_stop_words(source: str = "nltk") -> frozenset[str]:
    """Lower-case stop words of ``source``: ``nltk`` (179 words, the default) or ``spacy`` (326)."""
    if source == "nltk":
        return frozenset(NLTK_ENGLISH)
    if source == "spacy":
        from spacy.lang.en.stop_words import STOP_WORDS

        return frozenset(w.lower() for w in STOP_WORDS)
    raise ValueError(f"unknown stop-word list {source!r}; choose one of {', '.join(SOURCES)}")


@lru_cache(maxsize=64)
def spacy_stop_words(code: str) -> frozenset[str]:
    """spaCy's stop words for spaCy language ``code``, lower-cased."""
    from importlib import import_module

    words = import_module(f"spacy.lang.{code}.stop_words").STOP_WORDS
    return frozenset(w.lower() for w in words)


def stop_words(source: str = "auto", lang: str = "en") -> frozenset[str]:
    """The ``perturb.mask.stopwords`` list of Wiki-40B language ``lang``. English: ``auto`` and ``nltk``
    mean NLTK's 179 words (the paper's, kept above), ``spacy`` spaCy's 326. Other languages: ``auto`` and
    ``spacy`` mean spaCy's list of the language; ``nltk`` is refused (its lists are not here offline)."""
    from hades_ray.text.languages import language

    found = language(lang)
    if found.name == "en":
        return english_stop_words("nltk" if source == "auto" else source)
    if source == "nltk":
        raise ValueError(f"perturb.mask.stopwords=nltk is English only; language {found.name} takes auto or spacy")
    if source not in ("auto", "spacy"):
        raise ValueError(f"unknown stop-word list {source!r}; choose one of auto, {', '.join(SOURCES)}")
    return spacy_stop_words(found.spacy)
