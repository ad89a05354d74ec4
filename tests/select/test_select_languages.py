"""Selection rebuilds texts from instance words: the spaCy and encoder windows, and the original text judges
see. In Chinese, Japanese and Thai the words are joined without spaces, and the span's offsets follow."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from hades_ray.select.batch import display_original, hades_record
from hades_ray.pool.features import LinguisticsStage, span_windows, window_text
from hades_ray.pipeline.stage import Resources
from hades_ray.text.languages import language
from hades_ray.text.words import words
from hades_ray.pool.records import original_words

ORIGINAL = "我昨天在北京大学看见了他。"


def _row(language: str, text: str, original: str, replacement: str) -> dict:
    """An instance row: ``original`` in ``text`` replaced, its words cut the language's way."""
    before, after = text.split(original, 1)
    cut_before, cut_span, cut_after = (words(part, language) for part in (before, replacement, after))
    return {
        "id": "d#0",
        "doc_id": "d",
        "words": cut_before + cut_span + cut_after,
        "start": len(cut_before),
        "end": len(cut_before) + len(cut_span) - 1,
        "original_span": original,
        "replacement": replacement,
    }


def test_chinese_windows_join_words_without_spaces():
    row = _row("zh-cn", ORIGINAL, "北京大学", "上海")
    assert original_words(row, language("zh-cn")) == words(ORIGINAL, "zh-cn")
    (orig_text, o_start, o_end), (repl_text, r_start, r_end) = span_windows(row, 50, language("zh-cn"))
    assert orig_text == ORIGINAL and orig_text[o_start:o_end] == "北京大学"
    assert repl_text == "我昨天在上海看见了他。" and repl_text[r_start:r_end] == "上海"


def test_a_narrow_window_cuts_whole_words():
    cut = words("東京大学は日本で最も古い国立大学です。", "ja")
    span = cut.index("日本")
    text, start, end = window_text(cut, span, span, 1, language("ja"))
    assert text == "".join(cut[span - 1 : span + 2]) and text[start:end] == "日本"


def test_english_windows_keep_their_spaces():
    text, start, end = window_text(["a", "b", "cc", "d", "e"], 2, 2, 1, language("en"))
    assert text == "b cc d" and text[start:end] == "cc"


def test_judges_see_the_running_text_when_the_pool_has_no_document():
    row = _row("zh-cn", ORIGINAL, "北京大学", "上海")
    text, start, end = display_original(row, {}, language("zh-cn"))
    assert text == ORIGINAL and text[start:end] == "北京大学"
    text, start, end = display_original(_row("th", "ฉันชอบกินข้าวผัดมาก", "ข้าวผัด", "ส้มตำ"), {}, language("th"))
    assert text == "ฉันชอบกินข้าวผัดมาก" and text[start:end] == "ข้าวผัด"


def test_batch_records_name_their_language_and_english_ones_do_not():
    row = _row("zh-cn", ORIGINAL, "北京大学", "上海")
    record = hades_record(row, -1, language("zh-cn"))
    assert record["language"] == "zh-cn" and "===上海===" in record["replaced"]
    assert "language" not in hades_record(_row("en", "the cat sat", "cat", "dog"), -1, language("en"))
    json.dumps(record, ensure_ascii=False)


def test_linguistics_reads_a_chinese_window_with_the_languages_pipeline():
    stage = LinguisticsStage(Resources(), "blank", language("zh-cn"))
    stage.setup()
    (orig, o_start, o_end), (repl, r_start, r_end) = span_windows(
        _row("zh-cn", ORIGINAL, "北京大学", "上海"), 5, language("zh-cn")
    )
    batch = pa.table(
        {
            "ner_orig_text": [orig],
            "ner_orig_start": pa.array([o_start], pa.int32()),
            "ner_orig_end": pa.array([o_end], pa.int32()),
            "ner_repl_text": [repl],
            "ner_repl_start": pa.array([r_start], pa.int32()),
            "ner_repl_end": pa.array([r_end], pa.int32()),
        }
    )
    out = stage.process(batch)
    # no lemmatizer: the words stand for their lemmas, so original and replacement differ (simulated judges)
    assert out["orig_lemma"][0].replace(" ", "") == "北京大学" and out["repl_lemma"][0] == "上海"
    assert out["orig_ent"] == [""]  # a blank pipeline finds no entities


def test_judged_records_keep_their_language_for_the_detector():
    from hades_ray.select.crossval import hades_fields

    row = _row("zh-cn", ORIGINAL, "北京大学", "上海")
    record = {**hades_record(row, 1, language("zh-cn")), "judge": "a", "round": 1}
    fields = hades_fields(record)
    assert fields["language"] == "zh-cn" and "judge" not in fields
    assert "language" not in hades_fields(hades_record(_row("en", "the cat sat", "cat", "dog"), -1, language("en")))


def test_a_round_refuses_a_pool_of_another_language(micro_home, tmp_path):
    from hades_ray.config import load_config
    from hades_ray.errors import UserError
    from hades_ray.pipeline.executor import Executor
    from hades_ray.select.round import run_round
    from tests.select.fake_pool import build_pool

    workdir = tmp_path / "wd"
    build_pool(workdir / "pool", n_docs=4, docs_per_shard=4, unfinished=False)
    (workdir / "pool" / "config.resolved.yaml").write_text("language: de\n", encoding="utf-8")
    with pytest.raises(UserError) as refused:
        run_round(load_config(overrides=["select.round_sizes=[5]"]), workdir, 0, executor=Executor("local"))
    message = str(refused.value)
    assert "in language de" in message and "give --language de" in message and "\n" not in message
    assert not (workdir / "round-000").exists()
