"""``Detector.score``: the record ``hades-ray score`` writes, the same p(H) bits alone or in any batch,
and bad input as one ``ValueError`` naming the text's place."""

from __future__ import annotations

import json

import pytest

from hades_ray import Detector
from hades_ray.cli import main

TEXTS = [
    "Marie Curie was a physicist and chemist who conducted pioneering research on radioactivity in Paris .",
    "The river flows north through the valley, past three old mills, before it meets the sea near Bergen.",
    "He won the award in 1998 and retired two years later to a farm in Ohio where he wrote poems.",
    "Short one here.",
]


def _cli_records(detector, tmp_path, *extra) -> list[dict]:
    texts = tmp_path / "texts.jsonl"
    texts.write_text("".join(json.dumps({"id": f"t{k}", "text": t}) + "\n" for k, t in enumerate(TEXTS)))
    out = tmp_path / "cli"
    assert main(["score", "--model", str(detector), "--input", str(texts), "--output", str(out), *extra]) == 0
    return [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]


def _without_names(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in ("id", "source")}


@pytest.mark.parametrize("which", ["causal_online", "encoder_offline"])
def test_records_are_the_commands_lines_bit_for_bit(which, request, tmp_path):
    folder = request.getfixturevalue(which)
    det = Detector.open(folder)
    cli = _cli_records(folder, tmp_path, "--executor", "local")
    mine = det.score(TEXTS)
    # The same keys, values and float bits (JSON round-trips a float64 exactly); only the names differ.
    assert [_without_names(r) for r in mine] == [_without_names(r) for r in cli]
    assert [list(r) for r in mine] == [list(r) for r in cli]
    assert [r["id"] for r in mine] == [f"text:{k + 1}" for k in range(len(TEXTS))]


def test_one_text_is_the_record_of_score_text(causal_online, tmp_path):
    out = tmp_path / "one"
    assert main(["score", "--model", str(causal_online), "--text", TEXTS[1], "--output", str(out)]) == 0
    (line,) = (out / "scores.jsonl").read_text().splitlines()
    assert Detector.open(causal_online).score(TEXTS[1]) == json.loads(line)


def test_settings_are_the_commands_flags(encoder_online, tmp_path):
    det = Detector.open(encoder_online)
    cli = _cli_records(encoder_online, tmp_path, "--executor", "local", "--words", "all", "--threshold", "0.55")
    mine = det.score(TEXTS, words="all", threshold=0.55)
    assert [_without_names(r) for r in mine] == [_without_names(r) for r in cli]
    assert all(w["flag"] == (w["p"] >= 0.55) for r in mine for w in r["words"])
    offline = det.score(TEXTS[0], mode="offline", words="all")
    assert [w["word"] for w in offline["words"]] == [w["word"] for w in mine[0]["words"]]
    assert [w["p"] for w in offline["words"]] != [w["p"] for w in mine[0]["words"]]  # right context read


@pytest.mark.parametrize("which", ["causal_online", "encoder_online"])
def test_a_texts_bits_do_not_depend_on_the_batch(which, request):
    det = Detector.open(request.getfixturevalue(which))
    together = det.score(TEXTS)
    for k, text in enumerate(TEXTS):
        assert det.score(text)["words"] == together[k]["words"]
    shuffled = det.score([TEXTS[3], TEXTS[0], TEXTS[0], TEXTS[2], TEXTS[1]] * 3)
    assert shuffled[1]["words"] == shuffled[2]["words"] == together[0]["words"]
    assert shuffled[-1]["words"] == together[1]["words"]


@pytest.mark.parametrize(
    "texts, message",
    [
        (["fine text", ""], "texts[1]: empty_text"),
        (["fine text", "   \n"], "texts[1]: empty_text"),
        ([3, "fine"], "texts[0]: text_not_a_string (got int)"),
        (["fine", None], "texts[1]: text_not_a_string (got NoneType)"),
        (["fine", b"bytes"], "texts[1]: text_not_a_string (got bytes)"),
        (["fine", "word " * 4001], "texts[1]: text_too_long (over 20000 characters)"),
        ("", "text: empty_text"),
        (["lonely", ""][1:], "texts[0]: empty_text"),
        (42, "texts: give a string or a list of strings (got int)"),
    ],
)
def test_bad_input_is_one_value_error_naming_the_place(encoder_online, texts, message):
    with pytest.raises(ValueError) as error:
        Detector.open(encoder_online).score(texts)
    assert str(error.value) == message


def test_bad_settings_are_one_line_errors(encoder_online, encoder_offline):
    det = Detector.open(encoder_online)
    for call, message in (
        (lambda: det.score("a text", words="some"), "words='some': one of content, all"),
        (lambda: det.score("a text", threshold=1.5), "threshold=1.5: a number in [0, 1]"),
        (lambda: det.score("a text", mode="sideways"), "--mode 'sideways': online or offline"),
        (lambda: Detector.open(encoder_offline).stream(), "scores offline"),
    ):
        with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(")):
            call()
    assert det.score([]) == []
