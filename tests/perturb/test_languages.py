"""The perturbation in six Wiki-40B languages (German, Russian, Arabic, Hindi, Chinese, Japanese) keeps every
rule the English job keeps: the first two sentences untouched, no stop word or punctuation masked, a named
entity masked whole or not at all, replacements never the original, the text outside the spans kept byte
for byte, outputs that do not depend on shard or batch sizes, and HaDes records whose words are the
language's words. Test text: tests/data/wiki40b (written for the tests); models: the multilingual micro
kit (random weights, a WordPiece vocabulary that covers the six scripts); entities: micro spaCy pipelines
whose entity rulers know the test text's entities (tests/languages.py)."""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from hades_ray.cli import main
from hades_ray.config import load_config, resolve_language
from hades_ray.io.hades_format import parse_instance, read_instances
from hades_ray.io.readers import plan_shards, read_shard
from hades_ray.perturb.stages import perturb_stages
from hades_ray.text import pipeline as text_pipeline
from hades_ray.text.languages import language
from hades_ray.text.pipeline import LanguageSupportError, load_pipeline
from hades_ray.text.stopwords import stop_words
from hades_ray.text.words import join_words, word_spans, words
from tests.languages import (
    DATA,
    ENTITIES,
    LANGUAGES,
    save_english_pipeline,
    save_multilingual_pipeline,
    lead_file,
    leads,
    save_ner_pipeline,
)

MODELS = ("models.mlm=local:mlm-multi", "models.causal_lm=local:gpt2-multi")
CANDIDATES = 4
# sentence ends the test texts use: 。！？ end a sentence where they stand; . ! ? । only before a space or the end
SENTENCE_END = re.compile(r"[。！？]|[.!?।](?=\s|$)")


@pytest.fixture(scope="module")
def spacy_folders(tmp_path_factory) -> dict[str, str]:
    """Pipeline folders: one per test language, the multilingual one (``xx``) and an English one (``en``)."""
    root = tmp_path_factory.mktemp("spacy")
    folders = {lang: save_ner_pipeline(lang, root / lang) for lang in LANGUAGES}
    folders["xx"] = save_multilingual_pipeline(root / "xx")
    folders["en"] = save_english_pipeline(root / "en")
    return {name: str(folder) for name, folder in folders.items()}


def _overrides(spacy_folders: dict[str, str]) -> list[str]:
    sets = [*MODELS, f"perturb.rank.num_candidates={CANDIDATES}"]
    return sets + [f"languages.{lang}.spacy_model={spacy_folders[lang]}" for lang in LANGUAGES]


# ---- the multilingual micro kit ----------------------------------------------------------------------------


def test_the_multilingual_kit_is_the_same_bits_every_build(micro_multilingual_home, tmp_path):
    """tokenizers' WordPiece trainer alone gives another vocabulary from build to build (its "##" pieces are
    numbered in hash order); micro.py hands them over in order, so a second build is the same files."""
    from hades_ray.models.micro import build_micro_multilingual_kit
    from tests.languages import all_texts

    again = build_micro_multilingual_kit(tmp_path, all_texts())
    session = micro_multilingual_home / "models"
    for name in ("mlm-multi", "gpt2-multi"):
        files = sorted(p.relative_to(session / name) for p in (session / name).rglob("*") if p.is_file())
        assert files and all((again / name / f).read_bytes() == (session / name / f).read_bytes() for f in files)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_multilingual_vocabulary_covers_every_word(micro_multilingual_home, lang):
    from hades_ray.models.registry import load_tokenizer

    tokenizer = load_tokenizer("local:mlm-multi")
    assert load_tokenizer("local:gpt2-multi").get_vocab() == tokenizer.get_vocab()
    for text in leads(lang):
        encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        assert tokenizer.unk_token_id not in encoded["input_ids"]
        covered = {i for start, end in encoded["offset_mapping"] for i in range(start, end)}
        for start, end in word_spans(text, lang):  # vowel signs and marks included: nothing stripped
            assert covered >= set(range(start, end)), text[start:end]
        pieces = [text[start:end] for start, end in encoded["offset_mapping"]]
        assert all(len(p) == 1 for p in pieces if any(unicodedata.name(c, "").startswith("CJK UNIFIED") for c in p))
    assert tokenizer.tokenize("Hamburg") != tokenizer.tokenize("hamburg")  # cased


# ---- the steps, without Ray ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stepped(micro_multilingual_home, spacy_folders):
    """``stepped(lang)``: (config, rows after the four stages) of the language's test leads, the stages set
    up and run in this process as the job's actors run them; every candidate of every lead is checked."""
    done: dict[str, tuple] = {}

    def run(lang: str):
        if lang not in done:
            config = resolve_language(load_config("local", overrides=[*_overrides(spacy_folders), f"language={lang}"]))
            rows = [row for shard in plan_shards(str(lead_file(lang)), 100) for row in read_shard(shard).to_pylist()]
            for stage in perturb_stages(config):
                stage.setup()
                rows = stage.run(rows)
            done[lang] = config, rows
        return done[lang]

    return run


def _candidates(rows: list[dict]):
    """(original, perturbed, spans) of every candidate of every perturbed lead."""
    for row in rows:
        for text, spans in zip(row["cand_texts"], row["cand_spans"]):
            yield row["text"], text, spans


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_lead_is_kept_and_perturbed(stepped, lang):
    _, rows = stepped(lang)
    assert [row["status"] for row in rows] == ["ok"] * 4
    assert all(len(row["cand_texts"]) == CANDIDATES for row in rows)
    assert all(spans for _, _, spans in _candidates(rows))


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_first_two_sentences_are_never_touched(stepped, lang):
    config, rows = stepped(lang)
    nlp = load_pipeline(lang, config.spacy_model)
    for row, doc in zip(rows, nlp.pipe([row["text"] for row in rows])):
        third = list(doc.sents)[2].start_char
        second_end = [m.end() for m in SENTENCE_END.finditer(row["text"])][1]  # read without spaCy
        assert second_end <= third
        for spans in row["cand_spans"]:
            assert all(span["orig_start"] >= third for span in spans)
        for text in row["cand_texts"]:
            assert text[:third] == row["text"][:third]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_no_stop_word_or_punctuation_is_masked(stepped, lang):
    stops = stop_words("auto", lang)
    masked = [span["original"] for _, _, spans in _candidates(stepped(lang)[1]) for span in spans]
    assert masked
    for original in masked:
        assert original.lower() not in stops
        assert any(char.isalnum() for char in original)  # never a punctuation mark (。 ، । «)
        assert not unicodedata.category(original[0]).startswith("M")  # nor a word cut after its first letter


@pytest.mark.parametrize("lang", LANGUAGES)
def test_an_entity_is_masked_whole_or_not_at_all(stepped, lang):
    config, rows = stepped(lang)
    nlp = load_pipeline(lang, config.spacy_model)
    whole = set()
    for row, doc in zip(rows, nlp.pipe([row["text"] for row in rows])):
        assert {ent.text for ent in doc.ents} <= {text for texts in ENTITIES[lang].values() for text in texts}
        for ent in doc.ents:
            for spans in row["cand_spans"]:
                for span in spans:
                    if span["orig_start"] < ent.end_char and span["orig_end"] > ent.start_char:
                        assert (span["orig_start"], span["orig_end"]) == (ent.start_char, ent.end_char)
                        assert span["ner"] == ent.label_
                        whole.add(ent.text)
    assert whole, f"no ruler entity of {lang} was masked: the rule went untested"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_replacement_is_never_the_original(stepped, lang):
    for _, _, spans in _candidates(stepped(lang)[1]):
        for span in spans:
            assert span["replacement"] and span["replacement"].lower() != span["original"].lower()


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_text_outside_the_spans_is_kept_byte_for_byte(stepped, lang):
    for original, perturbed, spans in _candidates(stepped(lang)[1]):
        rebuilt, cursor, shift = [], 0, 0
        for span in spans:
            assert span["original"] == original[span["orig_start"] : span["orig_end"]]
            assert perturbed[span["start"] : span["end"]] == span["replacement"]
            unchanged = original[cursor : span["orig_start"]]
            assert perturbed[cursor + shift : span["start"]].encode() == unchanged.encode()
            rebuilt += [unchanged, span["replacement"]]
            shift = span["end"] - span["orig_end"]
            cursor = span["orig_end"]
        assert perturbed.encode() == "".join([*rebuilt, original[cursor:]]).encode()


# ---- the whole job, --executor local -------------------------------------------------------------------


@pytest.fixture(scope="module")
def job_runs(micro_multilingual_home, spacy_folders, tmp_path_factory) -> tuple[Path, Path]:
    """Two runs over the folder of language folders (one run per language into OUT/LANG): shards and
    batches at their defaults, and shards of one lead with batches of one document."""
    outputs = tmp_path_factory.mktemp("runs")
    args = ["perturb", "--input", str(DATA), "--executor", "local", "--language", "auto"]
    for setting in _overrides(spacy_folders):
        args += ["--set", setting]
    assert main([*args, "--output", str(outputs / "a")]) == 0
    small = ["perturb.read.shard_size=1"] + [
        f"perturb.resources.{s}.batch_size=1" for s in ("prepare", "replace", "rank")
    ]
    assert main([*args, "--output", str(outputs / "b"), *[a for s in small for a in ("--set", s)]]) == 0
    return outputs / "a", outputs / "b"


def _pool(output: Path) -> list[dict]:
    return [row for part in sorted((output / "pool").glob("part-*.parquet")) for row in pq.read_table(part).to_pylist()]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_folder_of_languages_is_one_run_per_language(job_runs, spacy_folders, lang):
    summary = json.loads((job_runs[0] / lang / "summary.json").read_text(encoding="utf-8"))
    segmenter = language(lang).segmenter
    assert summary["language"] == lang and summary["entities"] == spacy_folders[lang]
    assert summary["words"] == (segmenter.module if segmenter else "spaces and punctuation")
    assert (summary["read"], summary["kept"], summary["quarantined"]) == (4, 4, 0)
    assert summary["instances"] > 0
    assert "language: " + lang in (job_runs[0] / lang / "config.resolved.yaml").read_text(encoding="utf-8")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_bytes_do_not_depend_on_shard_or_batch_size(job_runs, lang):
    default, small = (run / lang for run in job_runs)
    assert json.loads((small / "summary.json").read_text())["shards"]["total"] == 4
    for view in ("instances.jsonl", "quarantine.jsonl"):
        assert (small / view).read_bytes() == (default / view).read_bytes()
    without_shard = [[{k: v for k, v in row.items() if k != "shard"} for row in _pool(run)] for run in (default, small)]
    assert without_shard[0] == without_shard[1]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_hades_records_carry_the_language_and_its_words(job_runs, lang):
    output = job_runs[0] / lang
    perturbed = {row["doc_id"]: row["perturbed"] for row in _pool(output)}
    lines = (output / "instances.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines
    for line, instance in zip(lines, read_instances(output / "instances.jsonl")):
        record = json.loads(line)
        assert record["language"] == lang
        assert parse_instance(record).to_json() == record == instance.to_json()  # the published format, both ways
        text = perturbed[record["doc_id"]]
        assert "".join(instance.words) == re.sub(r"\s+", "", text)  # every character is in a word, once
        if language(lang).spaced:
            assert instance.words == words(text, lang)
        else:  # words are cut at the spans' edges too (a span is whole words), and join back without spaces
            assert join_words(instance.words, lang) == text
        target = join_words(instance.words[instance.start : instance.end + 1], lang)
        assert target.replace(" ", "") == record["replacement"].replace(" ", "")


def test_hindi_words_keep_their_vowel_signs(job_runs):
    instances = read_instances(job_runs[0] / "hi" / "instances.jsonl")
    every = {word for instance in instances for word in instance.words}
    assert {"राजधानी", "स्थापना", "इमारतें", "फ़रवरी"} & every  # matras, virama, anusvara, nukta inside words
    assert not [word for word in every if unicodedata.category(word[0]).startswith("M")]


# ---- pipelines: multilingual, wrong language, missing segmenter ------------------------------------------


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_multilingual_pipeline_lends_its_entities_to_the_language_tokenizer(spacy_folders, lang):
    own = load_pipeline(lang, spacy_folders[lang])
    lent = load_pipeline(lang, spacy_folders["xx"])
    assert lent.lang == language(lang).spacy
    texts = leads(lang)
    for mine, theirs in zip(own.pipe(texts), lent.pipe(texts)):
        assert [t.text for t in theirs] == [t.text for t in mine]  # the language's own words
        assert [(e.start_char, e.end_char, e.label_) for e in theirs.ents] == [
            (e.start_char, e.end_char, e.label_) for e in mine.ents
        ]


def test_an_arabic_sentence_that_ends_with_a_number_ends_there():
    aramco = leads("ar")[3]
    assert aramco.count(". ") + 1 == 7
    assert len(list(load_pipeline("ar", "blank")(aramco).sents)) == 7


def test_an_english_pipeline_given_for_german_is_refused(spacy_folders, micro_multilingual_home, tmp_path, capsys):
    with pytest.raises(LanguageSupportError, match=r"is for language 'en', not 'de'"):
        load_pipeline("de", spacy_folders["en"])
    args = ["perturb", "--input", str(DATA / "de"), "--output", str(tmp_path / "out"), "--executor", "local"]
    args += ["--language", "auto", "--set", f"languages.de.spacy_model={spacy_folders['en']}"]
    assert main([*args, *[a for s in MODELS for a in ("--set", s)]]) == 2
    err = capsys.readouterr().err.strip()
    assert "'en', not 'de'" in err and "Traceback" not in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out" / "instances.jsonl").exists()


@pytest.fixture
def fresh_pipelines():
    """spaCy pipelines loaded again (they are cached per process), before and after the test."""
    text_pipeline.load_pipeline.cache_clear()
    text_pipeline.blank_pipeline.cache_clear()
    yield
    text_pipeline.load_pipeline.cache_clear()
    text_pipeline.blank_pipeline.cache_clear()


@pytest.mark.parametrize("lang, module", [("ja", "sudachipy"), ("th", "pythainlp"), ("zh-cn", "jieba")])
def test_a_missing_segmenter_is_one_line_naming_what_to_install(fresh_pipelines, monkeypatch, lang, module):
    for name in [module, *[m for m in sys.modules if m.startswith(module + ".")]]:
        monkeypatch.setitem(sys.modules, name, None)  # ``import module(.sub)`` now fails as if it were not installed
    segmenter = language(lang).segmenter
    with pytest.raises(LanguageSupportError) as raised:
        load_pipeline(lang, "blank")
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"language {lang}: ")
    assert segmenter.packages[0] in message and f"pip install 'hades_ray[{segmenter.extra}]'" in message
    with pytest.raises(LanguageSupportError):  # never English words in its place
        words("これは文です。" if lang == "ja" else "ข้อความ" if lang == "th" else "这是句子。", lang)


def test_a_missing_segmenter_stops_the_job_before_any_work(
    fresh_pipelines, micro_multilingual_home, monkeypatch, tmp_path, capsys
):
    monkeypatch.setitem(sys.modules, "sudachipy", None)
    args = ["perturb", "--input", str(DATA / "ja"), "--output", str(tmp_path / "out"), "--executor", "local"]
    args += ["--language", "auto", "--set", "spacy_model=blank", *[a for s in MODELS for a in ("--set", s)]]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "sudachipy" in err and "hades_ray[ja]" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out" / "_markers").exists()
