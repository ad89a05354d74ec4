"""The artifact check per language: a replacement glued to its neighbour is debris where words are spaced
and normal where they are not; word counts and marks follow the language."""

from __future__ import annotations

import pytest

from hades_ray.perturb.artifacts import ARTIFACT_KINDS, artifact_summary, count_artifacts, span_artifacts
from hades_ray.text.languages import language
from hades_ray.pool.schemas import SPAN_TYPE


def _replace(text: str, original: str, replacement: str, occurrence_start: int | None = None) -> dict:
    """A pool row with ``original`` (first occurrence in ``text``) replaced by ``replacement``."""
    start = text.index(original) if occurrence_start is None else occurrence_start
    perturbed = text[:start] + replacement + text[start + len(original) :]
    span = {"original": original, "replacement": replacement, "start": start, "end": start + len(replacement)}
    return {"perturbed": perturbed, "spans": [span]}


def _kinds(row: dict, name: str) -> list[str]:
    span = row["spans"][0]
    return span_artifacts(
        span["original"], span["replacement"], row["perturbed"], span["start"], span["end"], language(name)
    )


def test_a_german_replacement_glued_to_its_neighbour_is_an_artifact():
    text = "Am Ufer liegt ein Hausboot mit roten Fenstern."
    row = _replace(text, "boot", "schiff", text.index("Hausboot") + 4)
    assert row["perturbed"] == "Am Ufer liegt ein Hausschiff mit roten Fenstern."
    assert _kinds(row, "de") == ["glued"]
    assert _kinds(_replace(text, "Hausboot", "Segelschiff"), "de") == []


def test_a_chinese_replacement_touching_its_neighbours_is_clean():
    row = _replace("我昨天在北京大学看见了他。", "北京", "上海")
    assert _kinds(row, "zh-cn") == []
    counts = count_artifacts([row], language("zh-cn"))
    assert counts["with_artifacts"] == 0 and "glued" not in counts


def test_japanese_and_thai_replacements_inside_running_text_are_clean():
    assert _kinds(_replace("私は東京の大学で日本語を勉強しました。", "東京", "京都"), "ja") == []
    assert _kinds(_replace("ฉันชอบกินข้าวผัดมาก", "ข้าวผัด", "ก๋วยเตี๋ยว"), "th") == []


def test_unspaced_word_counts_come_from_the_segmenter():
    row = _replace("我昨天在北京看见了他。", "北京", "北京上海广州深圳")  # one word filled as several
    assert _kinds(row, "zh-cn") == ["token_count"]
    assert _kinds(_replace("我昨天在北京看见了他。", "北京", "，"), "zh-cn") == ["punctuation", "token_count"]


@pytest.mark.parametrize(
    ("language", "text", "original", "replacement"),
    [
        ("hi", "राम ने एक पुस्तक पढ़ी और सो गया।", "पुस्तक", "किताब"),
        ("ar", "قرأ الولد كتابا جميلا في المساء.", "كتابا", "قصةً"),
        ("ru", "Мальчик прочитал интересную книгу вечером.", "книгу", "повесть"),
    ],
)
def test_vowel_signs_and_case_endings_are_letters_not_punctuation(language, text, original, replacement):
    assert _kinds(_replace(text, original, replacement), language) == []


def test_a_repeated_hindi_word_with_vowel_signs_is_found():
    row = _replace("राम ने किताब पढ़ी और सो गया।", "ने", "किताब")
    assert _kinds(row, "hi") == ["repeated_word"]


def test_summary_names_the_kinds_its_language_checks():
    de, zh = language("de"), language("zh-cn")
    german = artifact_summary(count_artifacts([_replace("Ein Hausboot.", "boot", "schiff", 7)], de), de)
    assert german["by_kind"] == {**dict.fromkeys(ARTIFACT_KINDS, 0), "glued": 1}
    assert german["with_artifacts"] == 1 and german["rate"] == 1.0
    chinese = artifact_summary(count_artifacts([_replace("我在北京。", "北京", "上海")], zh), zh)
    assert list(chinese["by_kind"]) == list(ARTIFACT_KINDS) and chinese["rate"] == 0.0


def test_english_checks_no_glue_and_keeps_its_summary_keys():
    row = _replace("The houseboat sank.", "boat", "ship", 9)
    assert _kinds(row, "en") == []
    summary = artifact_summary(count_artifacts([row], language("en")), language("en"))
    assert list(summary) == ["replacements", "with_artifacts", "rate", "by_kind", "unchanged"]
    assert list(summary["by_kind"]) == list(ARTIFACT_KINDS)


def test_measuring_a_finished_run_reads_its_language(tmp_path, capsys):
    import json

    import pyarrow as pa

    from hades_ray.config import load_config, save_config
    from hades_ray.perturb.artifacts import main
    from hades_ray.pipeline import storage

    row = _replace("Am Ufer liegt ein Hausboot.", "boot", "schiff", 22)
    span = {**row["spans"][0], "orig_start": 22, "orig_end": 26, "ner": "", "pos": "NOUN"}
    table = pa.table(
        {"doc_id": ["d1"], "perturbed": [row["perturbed"]], "spans": [[span]]},
        schema=pa.schema([("doc_id", pa.string()), ("perturbed", pa.string()), ("spans", pa.list_(SPAN_TYPE))]),
    )
    storage.write_table(str(tmp_path / "pool" / "part-00000.parquet"), table)
    save_config(load_config(overrides=["language=de", "spacy_model=blank"]), tmp_path)
    assert main([str(tmp_path), "--flagged", "1"]) == 0
    printed = capsys.readouterr().out
    summary = json.loads(printed[: printed.rindex("}") + 1])
    assert summary["by_kind"]["glued"] == 1
    assert "d1: boot -> \"schiff\" ['glued']" in printed
