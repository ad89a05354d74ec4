"""``hades-ray languages``: a row per Wiki-40B language with its segmenter, stop words and NER pipeline, and
whether this machine has them; the pip extras it names are pyproject.toml's."""

from __future__ import annotations

import tomllib
from importlib import import_module, metadata
from pathlib import Path

import pytest

from hades_ray.cli import main
from hades_ray.markdown import pipe_table
from hades_ray.text import cli as languages_cli
from hades_ray.text.languages import LANGUAGES, MULTILINGUAL_NER

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _markdown_rows(capsys) -> dict[str, list[str]]:
    assert main(["languages", "--markdown"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == pipe_table(languages_cli.COLUMNS, [])
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]
    assert all(len(row) == len(languages_cli.COLUMNS) for row in rows)
    return {row[0]: row for row in rows}


def test_one_row_per_wiki40b_language_in_order(capsys):
    rows = _markdown_rows(capsys)
    assert list(rows) == list(LANGUAGES) and len(rows) == 41
    assert rows["de"][1:3] == ["German", "none needed"]
    assert rows["ko"][2] == "natto: hades_ray[ko] + MeCab-ko with mecab-ko-dic (system libraries)"
    assert rows["ja"][2] == "sudachipy: hades_ray[ja]"


def test_stop_words_are_the_lists_mask_uses(capsys):
    rows = _markdown_rows(capsys)
    assert rows["en"][3] == "NLTK (179)"  # the paper's list
    for name, spacy_code in (("de", "de"), ("zh-cn", "zh"), ("no", "nb")):
        spacy_list = import_module(f"spacy.lang.{spacy_code}.stop_words").STOP_WORDS
        assert rows[name][3] == f"spaCy ({len({w.lower() for w in spacy_list})})"


def test_ner_pipeline_is_the_languages_own_or_the_multilingual_one(capsys):
    rows = _markdown_rows(capsys)
    assert rows["de"][4] == "de_core_news_sm"
    assert rows["th"][4] == f"{MULTILINGUAL_NER} (multilingual)"
    assert sum(row[4].endswith("(multilingual)") for row in rows.values()) == sum(
        lang.ner_is_multilingual for lang in LANGUAGES.values()
    )


def test_installed_here_follows_what_is_installed(capsys, monkeypatch):
    pytest.importorskip("jieba")
    rows = _markdown_rows(capsys)
    assert rows["zh-cn"][5].startswith("segmenter: yes, NER: ")
    assert rows["de"][5] in ("NER: yes", "NER: no")  # no segmenter to install
    real = metadata.distribution

    def without_jieba(name):
        if name == "jieba":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "distribution", without_jieba)
    monkeypatch.setattr("spacy.util.is_package", lambda name: name == "de_core_news_sm")
    rows = _markdown_rows(capsys)
    assert rows["zh-cn"][5] == "segmenter: no (jieba>=0.42), NER: no"
    assert rows["de"][5] == "NER: yes"
    assert rows["ko"][5].endswith("system library not checked, NER: no")


def test_plain_table_aligns_its_columns_and_says_how_to_install(capsys):
    assert main(["languages"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    start = lines[0].index("segmenter")
    assert all(line[start - 2 : start] == "  " for line in lines[1:42])  # one column edge on every row
    assert [line.split()[0] for line in lines[1:42]] == list(LANGUAGES)
    assert "pip install 'hades_ray[EXTRA]'" in out and "hades_ray[languages]" in out


def test_pyproject_extras_are_the_segmenters_packages():
    extras = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    segmenters = {lang.segmenter.extra: lang.segmenter for lang in LANGUAGES.values() if lang.segmenter}
    assert set(segmenters) == {"zh", "ja", "th", "ko", "vi"}
    for extra, segmenter in segmenters.items():
        assert extras[extra] == list(segmenter.packages), extra
    assert extras["languages"] == ["hades_ray[zh,ja,th,vi]"]  # all but ko: pip cannot bring its system libraries
    assert "hades_ray[zh,ja,th]" in extras["dev"]
