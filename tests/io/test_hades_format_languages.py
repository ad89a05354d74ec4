"""HaDes files in languages written without spaces: ``replaced`` still separates words with spaces, so the
words must come back as written and the running text must be rebuilt the language's way."""

from __future__ import annotations

import json

import pytest

from hades_ray.io.hades_format import (
    HadesFormatError,
    Instance,
    instance_language,
    instance_text,
    read_instances,
    span_text,
    write_instances,
)
from hades_ray.text.words import words

UNSPACED = [
    ("zh-cn", "北京大学是中国最早的国立综合性大学。"),
    ("zh-tw", "臺北市是中華民國的首都。"),
    ("ja", "東京大学は日本で最も古い国立大学です。"),
    ("th", "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย"),
]


def _round_trip(tmp_path, instance: Instance) -> Instance:
    path = write_instances([instance], tmp_path / "set.jsonl")
    (back,) = read_instances(path)
    return back


@pytest.mark.parametrize(("language", "text"), UNSPACED)
def test_unspaced_text_comes_back_word_for_word_and_as_running_text(tmp_path, language, text):
    cut = words(text, language)
    assert len(cut) > 3  # the segmenter cut the text into words (not one long run)
    instance = Instance(cut, 1, 2, 1, {"id": "a#0", "language": language})
    back = _round_trip(tmp_path, instance)
    assert back.words == cut
    assert (back.start, back.end, back.label) == (1, 2, 1)
    assert instance_language(back).name == language
    assert instance_text(back) == text
    assert span_text(back) == "".join(cut[1:3])
    assert " " in json.loads((tmp_path / "set.jsonl").read_text(encoding="utf-8"))["replaced"]


def test_hindi_words_keep_their_vowel_signs(tmp_path):
    text = "भारत की राजधानी नई दिल्ली है।"
    cut = words(text, "hi")
    assert cut == ["भारत", "की", "राजधानी", "नई", "दिल्ली", "है", "।"]
    back = _round_trip(tmp_path, Instance(cut, 2, 2, 0, {"language": "hi"}))
    assert back.words == cut and span_text(back) == "राजधानी"
    assert instance_text(back) == "भारत की राजधानी नई दिल्ली है ।"  # a spaced language: one space between words


def test_a_record_without_language_is_english():
    instance = Instance(["the", "cat", "sat"], 1, 1)
    assert instance_language(instance).name == "en"
    assert instance_text(instance) == "the cat sat"
    assert Instance(["the", "cat"], 1, 1).to_json() == {
        "replaced": "the ===cat===",
        "replaced_ids": [1, 1],
        "hallucination": -1,
    }


@pytest.mark.parametrize("word", ["北京 大学", "", "a\u3000b", "tab\there"])
def test_a_word_with_whitespace_is_refused_at_write_time(tmp_path, word):
    instance = Instance(["我", word, "了"], 1, 1, 1, {"id": "doc#3", "language": "zh-cn"})
    with pytest.raises(HadesFormatError, match=r"instance doc#3: word 1 .*empty or holds whitespace"):
        write_instances([instance], tmp_path / "bad.jsonl")
    assert not (tmp_path / "bad.jsonl").exists()


def test_an_unknown_language_field_is_a_one_line_error(tmp_path):
    path = tmp_path / "set.jsonl"
    record = {"replaced": "我 ===爱=== 你", "replaced_ids": [1, 1], "hallucination": 1, "language": "klingon"}
    path.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    with pytest.raises(HadesFormatError, match=r"set.jsonl:1: field 'language': 'klingon' is not a Wiki-40B"):
        read_instances(path)
