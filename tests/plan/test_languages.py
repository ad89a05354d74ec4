"""``hades-ray plan`` on a sample of several Wiki-40B languages: each language folder is counted as its own
run (its config, its spaCy tokenizer and stop words), and what a text costs in each language is reported."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hades_ray.cli import main
from hades_ray.config import load_config
from hades_ray.models.registry import load_tokenizer
from hades_ray.plan.languages import language_samples
from hades_ray.text.pipeline import word_tokenizer
from hades_ray.text.segment import first_paragraph

pytest.importorskip("jieba")  # spaCy's Chinese tokenizer (the zh extra)

GERMAN = [
    "Der Fluss entspringt in den nördlichen Hügeln und fließt nach Süden durch Ackerland.",
    "Sein Tal wurde im zwölften Jahrhundert von Bauern besiedelt.",
    "Eine steinerne Brücke überquert den Fluss in der alten Marktstadt.",
    "Die Stadt wurde durch den Wollhandel reich und baute eine große Kirche.",
    "Mühlen am Ufer mahlten Getreide und spannen später Baumwolle für den Export.",
    "Heute ist das Tal für seine Obstgärten und Wanderwege bekannt.",
]
CHINESE = [
    "这条河发源于北部的丘陵，向南流经农田。",
    "它的山谷在十二世纪由农民定居。",
    "一座石桥在古老的集镇横跨这条河。",
    "这个小镇因羊毛贸易而致富，并建造了一座大教堂。",
    "河岸边的磨坊研磨谷物，后来纺织棉花出口。",
    "今天，这个山谷以果园和步道而闻名。",
]
ARABIC = [
    "ينبع النهر من التلال الشمالية ويتدفق جنوبا عبر الأراضي الزراعية.",
    "استوطن المزارعون واديه في القرن الثاني عشر.",
    "يعبر جسر حجري النهر عند بلدة السوق القديمة.",
    "أصبحت البلدة غنية من تجارة الصوف وبنت سوقا كبيرا.",
    "كانت المطاحن على الضفاف تطحن الحبوب وتغزل القطن للتصدير.",
    "يشتهر الوادي اليوم ببساتينه ومسارات المشي.",
]
SEPARATOR = {"de": " ", "zh-cn": "", "ar": " "}
# The reader's English check would drop every text before MASK; blank: no trained spaCy pipeline offline.
SETTINGS = ["--set", "spacy_model=blank", "--set", "perturb.read.min_english_stopword_ratio=0"]
GIVEN = ["--corpus-docs", "1000", "--mlm-tokens-per-s", "2000", "--lm-tokens-per-s", "500"]


def _wiki40b(number: int, sentences: list[str], separator: str) -> dict:
    """A Wiki-40B record: its lead is the first _START_PARAGRAPH_ block, up to _NEWLINE_."""
    lead = separator.join(sentences[number:] + sentences[:number])
    text = f"\n_START_ARTICLE_\nTitel\n_START_PARAGRAPH_\n{lead}_NEWLINE_Second paragraph."
    return {"wikidata_id": f"Q{number}", "text": text, "version_id": "1"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Wiki-40B's layout: a folder per language, three articles in each (de and zh-cn JSONL, ar Parquet)."""
    root = tmp_path_factory.mktemp("wiki40b")
    for name, sentences in (("de", GERMAN), ("zh-cn", CHINESE)):
        (root / name).mkdir()
        records = [_wiki40b(n, sentences, SEPARATOR[name]) for n in range(3)]
        lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        (root / name / "train.jsonl").write_text(lines, encoding="utf-8")
    (root / "ar").mkdir()
    pq.write_table(pa.Table.from_pylist([_wiki40b(n, ARABIC, " ") for n in range(3)]), root / "ar" / "train.parquet")
    return root


@pytest.fixture(scope="module")
def planned(micro_home, corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("plan") / "plan.json"
    assert main(["plan", "--input", str(corpus), *GIVEN, *SETTINGS, "--output", str(out)]) == 0
    return json.loads(out.read_text(encoding="utf-8"))


def test_each_language_folder_is_its_own_sample(corpus):
    config = load_config(overrides=["spacy_model=blank"])
    samples = language_samples(config, str(corpus))
    expected = [(name, [f"{corpus}/{name}"]) for name in ("ar", "de", "zh-cn")]
    assert [(s.language.name, s.paths) for s in samples] == expected


def test_plan_reports_each_languages_text_costs(planned, corpus):
    languages = planned["languages"]
    assert list(languages) == ["ar", "de", "zh-cn"]
    mlm, lm = load_tokenizer("local:mlm"), load_tokenizer("local:gpt2")
    for name, sentences in (("de", GERMAN), ("zh-cn", CHINESE), ("ar", ARABIC)):
        leads = [first_paragraph(_wiki40b(n, sentences, SEPARATOR[name])["text"]) for n in range(3)]
        words = [t for lead in leads for t in word_tokenizer(name)(lead) if not (t.is_punct or t.is_space)]
        cost = languages[name]
        assert cost["texts"] == 3 and cost["spacy_model"] == "blank"
        assert cost["words"] == len(words)
        assert cost["mlm_tokens"] == sum(len(mlm(lead, add_special_tokens=False)["input_ids"]) for lead in leads)
        assert cost["lm_tokens"] == sum(len(lm(lead, add_special_tokens=False)["input_ids"]) for lead in leads)
        assert cost["mlm_tokens_per_word"] == round(cost["mlm_tokens"] / cost["words"], 3)
    # jieba cuts Chinese into words, not one "word" per sentence
    assert languages["zh-cn"]["words"] > 3 * len(CHINESE) * 2
    # the same story costs a different number of tokens per word in each script
    per_word = {name: cost["mlm_tokens_per_word"] for name, cost in languages.items()}
    assert len(set(per_word.values())) == 3, per_word
    assert len({cost["lm_tokens_per_text"] for cost in languages.values()}) == 3


def test_the_plan_counts_every_language_together(planned):
    sample = planned["sample"]
    assert sample["read"] == 9 and sample["perturbed"] == 9
    assert sample["spacy_words"] == sum(cost["words"] for cost in planned["languages"].values())
    assert planned["plan"]["documents_read"] == 1000


def test_a_languages_overrides_apply_to_its_folder_only(micro_home, corpus, tmp_path, planned):
    out = tmp_path / "plan.json"
    args = ["plan", "--input", str(corpus), *GIVEN, *SETTINGS, "--output", str(out)]
    assert main([*args, "--set", "languages.de.perturb.rank.num_candidates=2"]) == 0
    sample = json.loads(out.read_text(encoding="utf-8"))["sample"]
    default = load_config().perturb.rank.num_candidates
    assert planned["sample"]["candidates"] == 9 * default
    assert sample["candidates"] == 3 * 2 + 6 * default


def test_printed_plan_has_a_line_per_language(micro_home, corpus, capsys):
    assert main(["plan", "--input", str(corpus), *GIVEN, *SETTINGS]) == 0
    printed = capsys.readouterr().out
    assert "languages (3;" in printed
    for name in ("ar", "de", "zh-cn"):
        assert f"\n  {name}: 3 texts" in printed


def test_language_flag_names_a_flat_files_language(micro_home, corpus, tmp_path, capsys):
    flat = tmp_path / "sample.jsonl"
    flat.write_text((corpus / "de" / "train.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    out = tmp_path / "plan.json"
    assert main(["plan", "--input", str(flat), *GIVEN, *SETTINGS, "--language", "de", "--output", str(out)]) == 0
    assert list(json.loads(out.read_text(encoding="utf-8"))["languages"]) == ["de"]
    assert main(["plan", "--input", str(flat), *GIVEN, *SETTINGS, "--language", "auto"]) == 2
    err = capsys.readouterr().err
    assert "names no Wiki-40B language folder" in err and "give --language NAME" in err and "Traceback" not in err


def test_an_english_sample_prints_no_language_section(micro_home, tmp_path, capsys):
    sentences = [f"The river passes the {place} and turns to the west there." for place in "abcdefg"]
    path = tmp_path / "english.jsonl"
    path.write_text(json.dumps({"id": "a", "text": " ".join(sentences)}) + "\n", encoding="utf-8")
    out = tmp_path / "plan.json"
    assert main(["plan", "--input", str(path), *GIVEN, "--output", str(out)]) == 0
    assert "languages" not in json.loads(out.read_text(encoding="utf-8"))
    assert "languages (" not in capsys.readouterr().out
