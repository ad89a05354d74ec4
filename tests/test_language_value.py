"""A run's language is one ``Language`` value (``hades_ray/text/languages.py``), never a string compared to
or defaulted to English's name outside ``hades_ray/text/``, where ``DEFAULT_LANGUAGE`` names it once.

Before the value (commit a09dbc6), ``english_literals`` found 78 ``"en"`` literals outside text/ in 30
modules: 21 comparisons, 42 parameter defaults, 3 dataclass-field defaults and 12 fallbacks
(``.get("language", "en")``, ``or "en"``, ``return "en"``). Now there are none, and the value writes and
reads an output's ``language`` field the way the strings did, so every output keeps its bytes."""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
from pathlib import Path

import yaml

import hades_ray
from tests import source_trees
from hades_ray.config import RESOLVED_NAME, HadesConfig, load_config, recorded_language
from hades_ray.text.languages import DEFAULT_LANGUAGE, LANGUAGES, language, language_of
from hades_ray.text.stopwords import reads_as, stop_words
from hades_ray.text.words import span_words, words

ROOT = Path(hades_ray.__file__).parent
TEXT = ROOT / "text"
NAMES = ("language", "lang")


def _outside_text():
    for path in source_trees.files(ROOT):
        if TEXT not in path.parents:
            yield path, source_trees.nodes(path)


def english_literals() -> list[str]:
    """Every ``"en"`` literal outside text/ (a comparison, a default or a fallback: there is no other use)."""
    return [
        f"{path.relative_to(ROOT.parent)}:{node.lineno}"
        for path, nodes in _outside_text()
        for node in nodes
        if isinstance(node, ast.Constant) and node.value == DEFAULT_LANGUAGE.name
    ]


def defaulted_language_parameters() -> list[str]:
    """Parameters and dataclass fields named ``language``/``lang`` outside text/ whose default is a string
    (``None``, "not given: the detector's", stays allowed)."""
    found = []
    for path, nodes in _outside_text():
        for node in nodes:
            pairs = []
            if isinstance(node, ast.arguments):
                positional = [*node.posonlyargs, *node.args]
                pairs += zip(positional[len(positional) - len(node.defaults) :], node.defaults)
                pairs += [(a, d) for a, d in zip(node.kwonlyargs, node.kw_defaults) if d is not None]
                pairs = [(a.arg, d) for a, d in pairs]
            elif isinstance(node, ast.ClassDef):
                pairs = [
                    (item.target.id, item.value)
                    for item in node.body
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is not None
                ]
            for name, default in pairs:
                if name in NAMES and isinstance(default, ast.Constant) and isinstance(default.value, str):
                    found.append(f"{path.relative_to(ROOT.parent)}:{default.lineno}: {name}")
    return found


def test_no_english_literal_outside_text():
    assert english_literals() == []


def test_no_language_parameter_defaults_to_a_name():
    assert defaulted_language_parameters() == []


def test_the_default_language_is_named_once_and_is_the_configs_default():
    assert DEFAULT_LANGUAGE is LANGUAGES["en"] and HadesConfig().language == DEFAULT_LANGUAGE.name
    assert HadesConfig().lang is DEFAULT_LANGUAGE and load_config(overrides=["language=de"]).lang is language("de")
    assert language(DEFAULT_LANGUAGE) is DEFAULT_LANGUAGE  # a value is itself; a name is looked up


def test_english_outputs_name_no_language_and_others_do():
    assert DEFAULT_LANGUAGE.is_default and DEFAULT_LANGUAGE.record_fields() == {}
    assert language("zh-cn").record_fields() == {"language": "zh-cn"} and not language("zh-cn").is_default
    for lang in LANGUAGES.values():
        assert language_of(lang.record_fields()) is lang  # what one writes, the other reads back
    assert language_of({}) is language_of({"language": ""}) is DEFAULT_LANGUAGE  # written before languages
    assert language_of({"language": "DE"}) is language("de")


def test_the_value_answers_what_runs_ask():
    zh, de, th, ar = (language(n) for n in ("zh-cn", "de", "th", "ar"))
    assert (DEFAULT_LANGUAGE.joiner, de.joiner, zh.joiner) == (" ", " ", "")
    assert zh.join(["北京", "大学"]) == "北京大学" and de.join(["ein", "Boot"]) == "ein Boot"
    assert span_words("U.S. army", DEFAULT_LANGUAGE) == ["U.S.", "army"]  # as English instances always were
    assert span_words("U.S. Armee", de) == words("U.S. Armee", de) == ["U", ".", "S", ".", "Armee"]
    assert (DEFAULT_LANGUAGE.other_language_reason, de.other_language_reason) == ("non_english", "not_de")
    assert DEFAULT_LANGUAGE.stop_word_sources == ("auto", "nltk", "spacy") and de.stop_word_sources == ("auto", "spacy")
    assert len(stop_words("auto", DEFAULT_LANGUAGE)) == 179 and "und" in stop_words("auto", de)
    assert th.sentence_ends == (" ",) and ar.splits_number_stops and ar.rtl and not de.rtl
    english = "The cat sat on the mat."
    assert reads_as(english, DEFAULT_LANGUAGE, 0.1) and not reads_as(english, de, 0.1)
    assert len({*LANGUAGES.values()}) == len(LANGUAGES)  # hashable: caches and sets key on it


def test_a_folder_without_a_resolved_config_is_in_the_default_language(tmp_path):
    assert recorded_language(tmp_path) is DEFAULT_LANGUAGE
    (tmp_path / RESOLVED_NAME).write_text(yaml.safe_dump({"language": "ja"}))
    assert recorded_language(tmp_path) is language("ja")


def test_a_generate_job_keeps_the_dict_and_digest_it_had_as_strings():
    from hades_ray.guard.sampling import Sampling
    from hades_ray.guard.stages import GenerateJob

    for name in ("en", "de"):
        job = GenerateJob("local:gpt2", Sampling(max_new_tokens=4), language(name), detector="d", threshold=0.5)
        as_strings = {f.name: getattr(job, f.name) for f in dataclasses.fields(job) if f.name != "language"}
        as_strings = {**as_strings, "sampling": dataclasses.asdict(job.sampling)}
        as_strings |= {} if name == "en" else {"language": name}  # what to_dict gave when it was a string
        assert job.to_dict() == as_strings and list(job.to_dict()) == list(as_strings)
        assert GenerateJob.from_dict(job.to_dict()) == job


def test_a_feature_view_digest_names_its_language_as_it_did():
    from hades_ray.detect.reps import STORE_FORMAT, FeatureView, _described

    for name in ("en", "zh-cn"):
        view = FeatureView.of({"mlm": "local:mlm", "feature_window": 32, "spacy_model": "blank", "language": name})
        plain = {"mlm": "local:mlm", "feature_window": 32, "spacy_model": "blank", "language": name}
        text = json.dumps([STORE_FORMAT, view.kind, plain, "data"], sort_keys=True, default=str)
        assert view.digest("data") == hashlib.sha256(text.encode()).hexdigest()[:16]
        assert json.loads(_described(view, "data"))["view"] == plain  # store.json, which made_for compares
    assert FeatureView.of({"mlm": "m", "feature_window": 1, "spacy_model": "blank"}).language is DEFAULT_LANGUAGE
