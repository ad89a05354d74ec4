"""Stop-word lists, offline. English: NLTK's (the HaDes paper's) by default, spaCy's on request. Every other
Wiki-40B language: spaCy's list for that language (``spacy.lang.XX.stop_words``), which every spaCy
install carries (NLTK's lists for other languages are data that cannot be downloaded offline).

``nltk.download`` cannot run on offline machines and no PyPI package ships NLTK's English list
unchanged (the ``stopwords`` and ``stop-words`` packages carry the ranks.nl list), so the list is
kept here verbatim: the 179 words of ``nltk_data/corpora/stopwords/english`` as NLTK 3.x shipped it
from 2018 until the 2024 update, in the file's order. HaDes (Liu et al., 2022, §3.2) names NLTK's list.
"""

from __future__ import annotations

import re
from functools import lru_cache

from hades_ray.text.languages import DEFAULT_LANGUAGE, Language, language
from hades_ray.text.words import words

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


def stop_words(source: str = "auto", lang: Language | str = DEFAULT_LANGUAGE) -> frozenset[str]:
    """The ``perturb.mask.stopwords`` list of Wiki-40B language ``lang``. English: ``auto`` and ``nltk``
    mean NLTK's 179 words (the paper's, kept above), ``spacy`` spaCy's 326. Other languages: ``auto`` and
    ``spacy`` mean spaCy's list of the language; ``nltk`` is refused (its lists are not here offline)."""
    found = language(lang)
    if found.is_default:
        return english_stop_words("nltk" if source == "auto" else source)
    if source not in found.stop_word_sources:
        if source in SOURCES:
            raise ValueError(
                f"perturb.mask.stopwords={source} is English only; language {found.name} takes "
                f"{' or '.join(found.stop_word_sources)}"
            )
        raise ValueError(f"unknown stop-word list {source!r}; choose one of auto, {', '.join(SOURCES)}")
    return spacy_stop_words(found.spacy)


# A small closed list suffices to tell English prose from other languages (``reads_as``); masking uses
# NLTK's list above, this one only guards the input.
ENGLISH_FUNCTION_WORDS = frozenset(
    """the of and to in a is was for on as by with that at from his her it an were are which this be or has
    had he she its their also they not but have one been who first after into other""".split()
)
_LETTER_RUN = re.compile(r"[^\W\d_]+", re.UNICODE)


def _function_word_units(text: str, lang: Language) -> tuple[list[str], frozenset[str]]:
    """The lower-cased words of ``text`` that ``reads_as`` counts, and the function words among which it
    counts them: English's runs of letters and its closed list (as the check always read English); elsewhere
    the language's words with a letter and its stop words."""
    if lang.is_default:
        return _LETTER_RUN.findall(text.lower()), ENGLISH_FUNCTION_WORDS
    found = [w.lower() for w in words(text, lang) if any(c.isalpha() for c in w)]
    return found, stop_words("auto", lang)


def reads_as(text: str, lang: Language | str, min_ratio: float) -> bool:
    """Whether ``text`` has at least ``min_ratio`` of ``lang``'s function words per word (and a word at all):
    a cheap check that a text is in the language the run is set to, so it is not masked with another's stop
    words."""
    found, marks = _function_word_units(text, language(lang))
    return bool(found) and not sum(w in marks for w in found) < min_ratio * len(found)
