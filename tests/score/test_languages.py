"""``hades-ray score`` in other Wiki-40B languages: word offsets are character offsets into the text in
every script (Devanagari vowel signs stay inside their word, Chinese and Japanese words come from the
segmenter), the language comes from ``--language``, the config or the detector, and Arabic is laid out
right to left in the heatmap. English words are the old ``\\w+|[^\\w\\s]`` units."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from hades_ray.cli import main
from hades_ray.score.words import find_targets
from hades_ray.text.languages import language
from hades_ray.text.pipeline import load_pipeline
from tests.score.test_score import TEXTS
from tests.detectors import detector_folder

SAMPLES = {
    "de": "Die Universität zu Köln wurde 1388 gegründet, sagt Müller.",
    "ru": "Москва — столица России, основанная в 1147 году.",
    "ar": "القاهرة هي عاصمة مصر، وأكبر مدنها.",
    "hi": "भारत की राजधानी नई दिल्ली है। हिन्दी भाषा बोली जाती है।",
    "zh-cn": "北京是中华人民共和国的首都，位于华北平原。",
    "ja": "東京は日本の首都であり、人口は約1400万人です。",
}
BLANK = ["--set", "spacy_model=blank"]  # no trained non-English spaCy pipeline is installed offline


@pytest.fixture(scope="module")
def causal(micro_home, tmp_path_factory):
    return detector_folder(tmp_path_factory.mktemp("det") / "gpt2", str(micro_home / "models" / "gpt2"), "online", 160)


@pytest.mark.parametrize("words", ["content", "all"])
@pytest.mark.parametrize("lang", sorted(SAMPLES))
def test_every_unit_and_target_is_its_own_characters_of_the_text(lang, words):
    text = SAMPLES[lang]
    t = find_targets(text, words, load_pipeline(lang, "blank"), lang=language(lang))
    assert [text[s:e] for s, e in zip(t.starts, t.ends)] == t.words
    assert "".join(t.words) == re.sub(r"\s", "", text)  # nothing lost, nothing doubled
    assert t.first and all(f <= la for f, la in zip(t.first, t.last))


def test_hindi_vowel_signs_stay_inside_their_words_and_chinese_words_are_segmented():
    hindi = find_targets(SAMPLES["hi"], "all", lang=language("hi")).words
    assert {"हिन्दी", "राजधानी", "दिल्ली", "भाषा"} <= set(hindi)
    assert not any(w in hindi for w in ("ि", "ी", "ा"))  # Python's \w alone cuts these out
    chinese = find_targets(SAMPLES["zh-cn"], "all", lang=language("zh-cn")).words
    assert "北京" in chinese and "首都" in chinese and max(map(len, chinese)) > 1


def test_content_words_skip_the_languages_own_stop_words():
    t = find_targets(SAMPLES["de"], "content", load_pipeline("de", "blank"), lang=language("de"))
    spans = {" ".join(t.words[f : la + 1]) for f, la in zip(t.first, t.last)}
    assert {"Universität", "Köln", "gegründet"} <= spans and not {"Die", "zu", "wurde", ","} & spans


def test_english_units_are_the_old_regex_units():
    text = " ".join(TEXTS) + " naïve café_2 — it's 3.5kg"
    t = find_targets(text, "all", lang=language("en"))
    assert t.words == re.findall(r"\w+|[^\w\s]", text)
    assert [t.words[f] for f in t.first] == [w for w in t.words if re.search(r"\w", w)]


def _score(detector, out, *args: str) -> tuple[dict, list[dict]]:
    common = ["score", "--model", str(detector), "--output", str(out), "--executor", "local"]
    assert main([*common, *args]) == 0
    summary = json.loads((out / "summary.json").read_text())
    return summary, [json.loads(line) for line in (out / "scores.jsonl").read_text(encoding="utf-8").splitlines()]


def test_cli_scores_each_language_with_offsets_into_the_original_text(causal, tmp_path):
    data = tmp_path / "texts.jsonl"
    for lang, text in SAMPLES.items():
        data.write_text(json.dumps({"id": lang, "text": text}, ensure_ascii=False) + "\n", encoding="utf-8")
        summary, (record,) = _score(causal, tmp_path / lang, "--input", str(data), "--language", lang, *BLANK)
        assert summary["language"] == record["language"] == lang
        assert record["words"] and all(text[w["start"] : w["end"]] == w["word"] for w in record["words"])


def test_english_output_has_no_language_field(causal, tmp_path):
    summary, (record,) = _score(causal, tmp_path / "en", "--text", TEXTS[0])
    assert "language" not in summary and "language" not in record


def test_a_detector_that_records_its_language_is_the_default_and_language_wins(causal, tmp_path):
    from hades_ray.detect.description import read_description, write_description

    hindi = tmp_path / "hindi"
    shutil.copytree(causal, hindi)
    write_description(hindi, {**read_description(hindi), "language": "hi"})
    _, (record,) = _score(hindi, tmp_path / "default", "--text", SAMPLES["hi"], *BLANK)
    assert record["language"] == "hi" and "हिन्दी" in {w["word"] for w in record["words"]}
    _, (record,) = _score(hindi, tmp_path / "given", "--text", SAMPLES["de"], "--language", "de", *BLANK)
    assert record["language"] == "de"
    _, (record,) = _score(hindi, tmp_path / "english", "--text", TEXTS[0], "--language", "en")
    assert "language" not in record


def test_a_language_changes_the_settings_digest_so_a_rerun_is_not_mixed(causal, tmp_path, capsys):
    out = tmp_path / "out"
    _score(causal, out, "--text", SAMPLES["de"], "--language", "de", *BLANK)
    capsys.readouterr()
    args = ["score", "--model", str(causal), "--output", str(out), "--executor", "local", "--text", SAMPLES["de"]]
    assert main([*args, "--language", "ru", *BLANK]) == 2  # output of another language is not reused
    assert "--force" in capsys.readouterr().err


def _attributes(page: str, tag_class: str) -> list[str]:
    return re.findall(rf'<p class="{tag_class}"([^>]*)>', page)


def test_arabic_heatmap_is_right_to_left_and_escaped(causal, tmp_path):
    hostile = SAMPLES["ar"] + ' <script>alert("x")</script>'
    out = tmp_path / "ar"
    _score(causal, out, "--text", hostile, "--language", "ar", "--html", *BLANK)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert _attributes(page, "text") == [' dir="rtl" lang="ar"']
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert re.search(r'<td dir="rtl" lang="ar"><b>[^<]+</b></td>', page)  # the most suspicious words
    english = tmp_path / "en"
    _score(causal, english, "--text", TEXTS[0], "--html")
    assert _attributes((english / "report.html").read_text(), "text") == [""]


def test_chromium_lays_the_arabic_heatmap_out_right_to_left(causal, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed")
    out = tmp_path / "ar"
    _score(causal, out, "--text", SAMPLES["ar"], "--language", "ar", "--html", "--words", "all", *BLANK)
    page = (out / "report.html").read_text(encoding="utf-8")
    # The page forbids scripts; a copy without the policy measures where the words stand. Right to left,
    # the first word starts at the paragraph's right edge and the last one ends to its left (the bidi
    # algorithm alone, in a left-to-right paragraph, would order the words so too, but from the left edge).
    probe = (
        "<script>const p=document.querySelector('p.text').getBoundingClientRect();"
        "const w=[...document.querySelectorAll('p.text .w')];"
        "const a=w[0].getBoundingClientRect(),b=w[w.length-1].getBoundingClientRect();"
        "const rtl=a.top===b.top&&a.left>b.right&&p.right-a.right<2&&b.left-p.left>100;"
        "document.title=rtl?'rtl':'ltr '+[p.left,p.right,a.left,a.right,b.left,b.right].join(' ');</script>"
    )
    probed = re.sub(r"<meta http-equiv[^>]*>", "", page).replace("</body>", probe + "</body>")
    (tmp_path / "probe.html").write_text(probed, encoding="utf-8")
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1000,800"]
    dom = subprocess.run(
        [*flags, "--dump-dom", (tmp_path / "probe.html").as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    assert "<title>rtl</title>" in dom


def test_a_missing_spacy_pipeline_is_one_line_before_any_work(causal, tmp_path, capsys):
    import spacy.util

    if spacy.util.is_package("de_core_news_sm"):
        pytest.skip("de_core_news_sm is installed here")
    out = tmp_path / "out"
    args = ["score", "--model", str(causal), "--output", str(out), "--text", SAMPLES["de"], "--language", "de"]
    assert main(args) == 2  # spacy_model auto: de_core_news_sm, not installed offline
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "de_core_news_sm" in err[0] and "blank" in err[0]
    assert not out.exists()
