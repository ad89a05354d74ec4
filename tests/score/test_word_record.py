"""The one word record (``hades_ray/score/word_record.py``, issue 46): what reads words an older version may
have written or served takes the old ``p_hallucination``/``flagged`` spelling too. That every surface gives
the same record: ``tests/serve/test_serve.py::test_every_surface_gives_the_one_word_record``."""

from __future__ import annotations

from hades_ray.guard.http_judge import HttpJudge
from hades_ray.score.html import marked_text, most_suspicious
from hades_ray.score.word_record import WordRecord, read_word, word_record
from hades_ray.text.languages import DEFAULT_LANGUAGE as ENGLISH

TEXT = "Marie Curie was born in Warsaw."
NEW = [word_record("Marie Curie", 0, 11, 0.12, 0.5), word_record("Warsaw", 24, 30, 0.8, 0.5)]
OLD = [{"word": w["word"], "start": w["start"], "end": w["end"], "p_hallucination": w["p"], "flagged": w["flag"]}
       for w in NEW]  # fmt: skip


def test_the_record_and_its_builder():
    assert list(WordRecord.__annotations__) == ["word", "start", "end", "p", "flag"]
    assert [list(w) for w in NEW] == [list(WordRecord.__annotations__)] * 2
    assert [w["flag"] for w in NEW] == [False, True]
    assert word_record("Warsaw", 24, 30, 0.8, None)["flag"] is False  # no threshold: nothing flagged


def test_read_word_takes_either_spelling():
    assert [read_word(w) for w in OLD] == NEW
    assert all(read_word(w) is w for w in NEW)  # today's spelling as it is
    assert read_word(OLD[1] | {"new_tokens": 4}) == NEW[1] | {"new_tokens": 4}  # other keys kept
    assert read_word(NEW[0] | {"p_hallucination": 0.9})["p"] == 0.12  # both spellings: today's wins


def test_the_heatmap_reads_old_words_as_new_ones():
    record = {"id": "text:1", "text": TEXT}
    assert marked_text(TEXT, OLD) == marked_text(TEXT, NEW)
    assert most_suspicious([record | {"words": OLD}]) == most_suspicious([record | {"words": NEW}])


def test_the_http_judge_reads_a_server_from_before_issue_46():
    got = []
    for words in (NEW, OLD):
        judge = object.__new__(HttpJudge)  # no /healthz: only the reading of /score/next's answer
        judge.language = ENGLISH
        judge.call = lambda method, path, body=None, words=words: {"words": words, "next": 30}
        got.append(judge.score_chunks([(0, "Marie Curie was born in", " Warsaw.")]))
    assert got[0] == got[1] == [[{"start": 1, "end": 7, "word": "Warsaw", "p": 0.8}]]
