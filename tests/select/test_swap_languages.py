"""The Date/Name drop in every language: a pipeline that names persons PER (spaCy's multilingual
``xx_ent_wiki_sm``, the German, French, Russian... ones) has them stored and matched as PERSON, so a name
replaced by a name is dropped; and where the run's pipeline labels no dates, the round says so once.

The pipelines are built here: spaCy's blank multilingual (``xx``) pipeline with an entity ruler that labels
names PER and nothing DATE, as ``xx_ent_wiki_sm`` comes (its labels: PER, LOC, ORG, MISC)."""

from __future__ import annotations

import logging

import pandas as pd
import pyarrow as pa
import pytest

from hades_ray.pipeline.stage import Resources
from hades_ray.select import filters
from hades_ray.select.decide import Rule, decide
from hades_ray.pool.features import LinguisticsStage, SpanWindowsStage
from hades_ray.text.languages import DEFAULT_LANGUAGE, language
from hades_ray.text.pipeline import entity_labels
from hades_ray.text.words import words

TURKISH = language("tr")  # one of the languages on the multilingual pipeline
NAMES = ("Ayşe Yılmaz", "Mehmet Demir", "Anna", "Maria", "Smith", "Jones")


@pytest.fixture(scope="module")
def multilingual_pipeline(tmp_path_factory) -> str:
    """A pipeline folder in ``xx_ent_wiki_sm``'s style: the multilingual tokenizer, names labelled PER, no dates."""
    import spacy

    nlp = spacy.blank("xx")
    nlp.add_pipe("entity_ruler").add_patterns([{"label": "PER", "pattern": name} for name in NAMES])
    folder = tmp_path_factory.mktemp("xx_names")
    nlp.to_disk(folder)
    return str(folder)


def _row(text: str, original: str, replacement: str) -> dict:
    before, after = text.split(original, 1)
    cut_before, cut_span, cut_after = (words(part, TURKISH) for part in (before, replacement, after))
    return {
        "words": cut_before + cut_span + cut_after,
        "start": len(cut_before),
        "end": len(cut_before) + len(cut_span) - 1,
        "original_span": original,
    }


def _features(rows: list[dict], spacy_model: str) -> dict[str, list]:
    windows = SpanWindowsStage(Resources(), 0, 15, TURKISH).process(pa.Table.from_pylist(rows))
    stage = LinguisticsStage(Resources(), spacy_model, TURKISH)
    stage.setup()
    return stage.process(pa.table({k: v for k, v in windows.items() if k.startswith("ner_")}))


def test_a_per_to_per_swap_is_dropped_with_a_multilingual_pipeline(multilingual_pipeline):
    text = "Dün Ayşe Yılmaz Ankara'ya trenle gitti ."
    rows = [_row(text, "Ayşe Yılmaz", "Mehmet Demir"), _row(text, "trenle", "otobüsle")]
    features = _features(rows, multilingual_pipeline)
    assert features["orig_ent"] == ["PERSON", ""] and features["repl_ent"] == ["PERSON", ""]  # PER by its name
    table = pa.table(
        {
            "id": ["d#0", "d#1"],
            "similarity": pa.array([0.1, 0.1], pa.float32()),
            "orig_ent": features["orig_ent"],
            "repl_ent": features["repl_ent"],
        }
    )
    rule = Rule(seed=0, round_index=0, paraphrase_threshold=0.9, swap_entity_types=("DATE", "PERSON"),
                drop_share=1.0, taken=frozenset())  # fmt: skip
    decided = decide(table, rule)
    assert decided["obvious_swap"].tolist() == [True, False]
    assert decided["keep_swap"].tolist() == [False, True] and decided["alive"].tolist() == [False, True]


def test_labels_stored_before_the_aliases_were_resolved_still_match():
    frame = pd.DataFrame({"orig_ent": ["PER", "PERSON", "PER", "DATE"], "repl_ent": ["PER", "PER", "LOC", "PERSON"]})
    assert filters.obvious_swaps(frame, ["DATE", "PERSON"]).tolist() == [True, True, False, True]
    assert filters.obvious_swaps(frame, ["PER"]).tolist() == [True, True, False, False]  # a config naming PER


def test_the_language_answers_its_entity_labels_by_one_set_of_names(multilingual_pipeline):
    assert TURKISH.entity_name("PER") == language("de").entity_name("PER") == "PERSON"
    assert DEFAULT_LANGUAGE.entity_name("PERSON") == "PERSON" and TURKISH.entity_name("MISC") == "MISC"
    assert TURKISH.entity_labels == ("LOC", "MISC", "ORG", "PERSON")  # xx_ent_wiki_sm: no dates
    assert {"DATE", "PERSON"} <= set(DEFAULT_LANGUAGE.entity_labels)
    assert entity_labels(TURKISH, "auto") == TURKISH.entity_labels  # not installed here: the table's
    assert entity_labels(TURKISH, multilingual_pipeline) == ("PERSON",)  # an installed one's, from its meta.json
    assert entity_labels(TURKISH, "blank") == ()
    assert {"DATE", "PERSON"} <= set(entity_labels(DEFAULT_LANGUAGE, "auto"))  # English's installed pipeline


def test_the_message_names_the_language_and_the_part_that_cannot_apply():
    message = filters.unlabeled_swap_message("tr", "xx_ent_wiki_sm", TURKISH.entity_labels, ["DATE", "PERSON"])
    assert message.startswith("language tr: spaCy pipeline xx_ent_wiki_sm labels no DATE entities")
    assert "the Date part of the Date/Name drop" in message and "\n" not in message
    blank = filters.unlabeled_swap_message("de", "blank", (), ["DATE", "PERSON"])
    assert "labels no entities" in blank and "the Date and Name parts" in blank
    labels = DEFAULT_LANGUAGE.entity_labels
    assert filters.unlabeled_swap_message("en", "en_core_web_sm", labels, ["DATE", "PERSON"]) == ""
    assert filters.unlabeled_swap_message("sv", "sv_core_news_sm", None, ["DATE", "PERSON"]) == ""  # not known


def test_a_round_drops_name_swaps_and_says_once_that_its_pipeline_labels_no_dates(
    micro_home, tmp_path, multilingual_pipeline, caplog
):
    from hades_ray.config import load_config
    from hades_ray.pipeline.executor import Executor
    from hades_ray.select.round import run_round
    from tests.select.fake_pool import build_pool

    workdir = tmp_path / "wd"
    build_pool(workdir / "pool", n_docs=4, docs_per_shard=4, unfinished=False)
    (workdir / "pool" / "config.resolved.yaml").write_text("language: tr\n", encoding="utf-8")
    overrides = ["language=tr", f"spacy_model={multilingual_pipeline}", "select.round_sizes=[5]"]
    config = load_config(overrides=[*overrides, "select.paraphrase_threshold=1.0"])
    with caplog.at_level(logging.WARNING):
        summary = run_round(config, workdir, 0, executor=Executor("local"))
    said = [m for m in summary["messages"] if "labels no DATE entities" in m]
    assert len(said) == 1 and said[0].startswith("language tr: ") and "the Date part" in said[0]
    assert sum("labels no DATE entities" in r.getMessage() for r in caplog.records) == 1
    # Anna->Maria and Smith->Jones in each of the 4 documents: names the pipeline labels PER
    assert summary["counts"]["obvious_swaps"] == 8
