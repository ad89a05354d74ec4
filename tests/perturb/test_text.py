"""Pure perturbation pieces: input checks, readers, MASK choices, span bookkeeping, HaDes output."""

import json

import pytest

from hades_ray.perturb.settings import MaskConfig, ReadConfig
from hades_ray.io.hades_format import parse_instance
from hades_ray.io.readers import InputError, plan_shards, read_shard
from hades_ray.perturb.mask import align_units, choose_spans, spans_to_mask
from hades_ray.perturb.reject import reject_reason
from hades_ray.perturb.spans import apply_replacements, hades_instances, words_with_span_indices
from hades_ray.text.segment import first_paragraph
from hades_ray.text.languages import DEFAULT_LANGUAGE

TEXT = (
    "Marie Curie was a physicist. She was born in Warsaw in 1867. "
    "She moved to Paris and studied physics at the Sorbonne. "
    "Her research on radioactivity earned two Nobel Prizes. "
    "She founded the Curie Institute in Paris."
)


def test_first_paragraph_of_wiki40b_text():
    raw = (
        "_START_ARTICLE_\nAda Lovelace\n_START_SECTION_\nEarly life\n_START_PARAGRAPH_\n"
        "First paragraph here._NEWLINE_Second paragraph.\n_START_SECTION_\nLater\n_START_PARAGRAPH_\nNo."
    )
    assert first_paragraph(raw) == "First paragraph here."
    assert first_paragraph("Lead one.\n\nNext one.") == "Lead one."


@pytest.mark.parametrize(
    "text, reason",
    [
        ("   ", "empty_text"),
        ("word " * 25_000, "too_long"),
        ("The cat <script>alert(1)</script> sat on the mat and was happy.", "html_markup"),
        ("Der Hund ist groß und die Katze schläft auf dem Sofa im Wohnzimmer.", "non_english"),
        ("1234 5678 9012 ---- //// 3456 7890 1234 5678", "not_prose"),
        (TEXT, ""),
    ],
)
def test_reject_reasons(text, reason):
    assert reject_reason(text, ReadConfig(), DEFAULT_LANGUAGE) == reason


def test_reader_marks_every_bad_row_with_a_reason(tmp_path):
    path = tmp_path / "in.jsonl"
    lines = [
        json.dumps({"id": "ok", "text": TEXT}).encode(),
        b"{not json",
        json.dumps({"id": "no-text"}).encode(),
        json.dumps({"id": "num", "text": 5}).encode(),
        b'{"id": "bad-utf8", "text": "caf\xe9"}',
        b"",
        json.dumps(["a list"]).encode(),
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    rows = _read(path)
    assert [r["reject"] for r in rows] == [
        "",
        "invalid_json",
        "missing_text",
        "text_not_a_string",
        "invalid_utf8",
        "not_an_object",
    ]
    assert rows[1]["source"] == f"{path}:2"
    assert len(_read(path, limit=2)) == 2


def _read(path, limit=None):
    rows = [r for shard in plan_shards(str(path), 3, limit) for r in read_shard(shard).to_pylist()]
    return sorted(rows, key=lambda r: r["row"])


def test_reader_names_a_missing_input():
    with pytest.raises(InputError, match="nope.jsonl"):
        plan_shards("nope.jsonl", 10)


def test_align_units_drops_spans_cutting_a_token():
    offsets = [(0, 0), (0, 3), (3, 5), (6, 11), (0, 0)]  # [CLS] "don" "'t" "think" [SEP]
    units = [{"start": 0, "end": 2, "ner": "", "pos": "AUX"}, {"start": 6, "end": 11, "ner": "", "pos": "VERB"}]
    aligned = align_units(units, offsets, MaskConfig())
    assert [(u["token_start"], u["token_end"]) for u in aligned] == [(3, 4)]


def test_span_choice_is_keyed_by_seed_document_and_candidate():
    units = [{"start": i, "end": i + 1} for i in range(40)]
    config = MaskConfig(ratio=0.15)
    assert spans_to_mask(40, config) == 6
    first = choose_spans(units, config, seed=1, doc_id="d", candidate=0)
    assert first == sorted(first) and len(set(first)) == 6
    assert first == choose_spans(units, config, seed=1, doc_id="d", candidate=0)
    assert first != choose_spans(units, config, seed=1, doc_id="d", candidate=1)
    assert first != choose_spans(units, config, seed=2, doc_id="d", candidate=0)


def test_replacements_and_hades_instances_agree():
    original = "She moved to Paris and studied physics at the Sorbonne."
    spans = [
        {"orig_start": 13, "orig_end": 18, "replacement": "New York", "ner": "GPE", "pos": "PROPN"},
        {"orig_start": 31, "orig_end": 38, "replacement": "law", "ner": "", "pos": "NOUN"},
    ]
    perturbed, placed = apply_replacements(original, spans)
    assert perturbed == "She moved to New York and studied law at the Sorbonne."
    assert [perturbed[s["start"] : s["end"]] for s in placed] == ["New York", "law"]
    assert [s["original"] for s in placed] == ["Paris", "physics"]
    words, ranges = words_with_span_indices(perturbed, placed, DEFAULT_LANGUAGE)
    assert ranges == [(3, 4), (7, 7)]
    records = hades_instances("doc", perturbed, placed, language=DEFAULT_LANGUAGE)
    for record, (first, last) in zip(records, ranges):
        instance = parse_instance(json.loads(json.dumps(record)))
        assert (instance.start, instance.end) == (first, last)
        assert " ".join(instance.words) == " ".join(words)
    assert records[0]["replaced"].startswith("She moved to ===New York=== and")
    assert records[1]["original_span"] == "physics" and records[1]["hallucination"] == -1
