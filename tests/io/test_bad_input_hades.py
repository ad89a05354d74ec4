"""Fuzz table for the HaDes reader: every bad line gives its one-line error naming file, line and field,
or with skip_bad a quarantine entry with that reason; good lines around it are still read; never a
traceback (any exception other than HadesFormatError fails the test)."""

from __future__ import annotations

import json

import pytest

from hades_ray.cli import main
from hades_ray.io.hades_format import HadesFormatError, read_instances, write_instances
from hades_ray.io.lines import MAX_LINE_BYTES

GOOD = {"replaced": "the ===cat=== sat on the mat", "replaced_ids": [1, 1], "hallucination": 1}


def _json(record) -> bytes:
    return json.dumps(record).encode("utf-8")


# (class of bad input, the bad line as bytes, what the error must say)
BAD_LINES = [
    (
        "invalid UTF-8",
        b'{"replaced": "caf\xe9 ===x===", "replaced_ids": [1, 1]}',
        "not valid UTF-8 (byte 18 of the line)",
    ),
    ("truncated UTF-8 sequence", b'{"replaced": "\xe2\x82"}', "not valid UTF-8"),
    ("deeply nested JSON", b"[" * 100_000 + b"]" * 100_000, "JSON nested too deeply"),
    ("not JSON", b"replaced: the cat", "not valid JSON"),
    ("truncated JSON", b'{"replaced": "the ===cat===', "not valid JSON"),
    ("integer of 5,000 digits", b'{"replaced_ids": [' + b"9" * 5000 + b", 1]}", "not usable JSON"),
    (
        "line over 1 MiB",
        b'{"replaced": "' + b"a " * (MAX_LINE_BYTES // 2 + 8) + b'"}',
        "line longer than 1048576 bytes",
    ),
    ("a JSON list", b"[1, 2, 3]", "expected a JSON object"),
    ("a JSON string", b'"the cat"', "expected a JSON object"),
    ("null", b"null", "expected a JSON object"),
    ("missing replaced", _json({"replaced_ids": [0, 0]}), "field 'replaced'"),
    ("replaced not a string", _json({**GOOD, "replaced": ["the", "cat"]}), "field 'replaced'"),
    ("replaced blank", _json({**GOOD, "replaced": "   "}), "field 'replaced'"),
    ("label 1.0", _json({**GOOD, "hallucination": 1.0}), "field 'hallucination': 1.0 is not one of the integers"),
    ("label true", _json({**GOOD, "hallucination": True}), "field 'hallucination': True"),
    ("label 2", _json({**GOOD, "hallucination": 2}), "field 'hallucination': 2"),
    ("label string", _json({**GOOD, "hallucination": "1"}), "field 'hallucination': '1'"),
    ("label NaN", b'{"replaced": "the ===cat=== sat", "replaced_ids": [1, 1], "hallucination": NaN}', "hallucination"),
    ("ids missing", _json({"replaced": GOOD["replaced"]}), "field 'replaced_ids'"),
    ("ids floats", _json({**GOOD, "replaced_ids": [1.0, 1.0]}), "field 'replaced_ids'"),
    ("ids booleans", _json({**GOOD, "replaced_ids": [True, True]}), "field 'replaced_ids'"),
    ("ids of length 3", _json({**GOOD, "replaced_ids": [1, 1, 1]}), "field 'replaced_ids'"),
    ("ids reversed", _json({**GOOD, "replaced_ids": [2, 1]}), "is reversed"),
    ("ids out of range", _json({**GOOD, "replaced_ids": [1, 99]}), "out of range"),
    ("ids negative", _json({**GOOD, "replaced_ids": [-1, 1]}), "out of range"),
    ("ids disagree with markers", _json({**GOOD, "replaced_ids": [2, 2]}), "disagrees with the === markers"),
]


def _file(tmp_path, bad: bytes):
    path = tmp_path / "data.txt"
    path.write_bytes(_json(GOOD) + b"\n" + bad + b"\n" + _json({**GOOD, "hallucination": 0}) + b"\n")
    return path


@pytest.mark.parametrize("name,line,expected", BAD_LINES, ids=[b[0] for b in BAD_LINES])
def test_bad_line_is_an_error_naming_file_line_and_reason(tmp_path, name, line, expected):
    path = _file(tmp_path, line)
    with pytest.raises(HadesFormatError) as error:
        read_instances(path)
    message = str(error.value)
    assert message.startswith(f"{path}:2: ") and expected in message and "\n" not in message


@pytest.mark.parametrize("name,line,expected", BAD_LINES, ids=[b[0] for b in BAD_LINES])
def test_skip_bad_quarantines_with_the_reason_and_keeps_the_rest(tmp_path, name, line, expected):
    bad: list[dict] = []
    instances = read_instances(_file(tmp_path, line), skip_bad=True, bad=bad)
    assert [i.label for i in instances] == [1, 0]  # the lines on both sides are read
    assert len(bad) == 1 and bad[0]["line"] == 2 and expected in bad[0]["reason"]


def test_the_table_covers_the_issue_and_counts(capsys):
    names = {b[0] for b in BAD_LINES}
    assert {"invalid UTF-8", "deeply nested JSON", "label 1.0"} <= names
    with capsys.disabled():
        print(f"\nHaDes reader: {len(BAD_LINES)} bad-input classes")


def test_labels_are_written_back_as_integers(tmp_path):
    path = tmp_path / "ok.txt"
    path.write_text(json.dumps(GOOD) + "\n", encoding="utf-8")
    out = write_instances(read_instances(path), tmp_path / "back.txt")
    assert json.loads(out.read_text(encoding="utf-8"))["hallucination"] == 1
    assert '"hallucination": 1}' in out.read_text(encoding="utf-8") or '"hallucination": 1,' in out.read_text()


def test_bom_blank_lines_and_a_directory(tmp_path):
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbf" + _json(GOOD) + b"\n\n   \n")
    assert len(read_instances(path)) == 1
    with pytest.raises(HadesFormatError, match="not a file"):
        read_instances(tmp_path)


def test_cli_exits_2_with_one_line_and_no_traceback(tmp_path, capsys):
    bad = _file(tmp_path, b'{"replaced": "caf\xe9"}')
    code = main(["train", "--train", str(bad), "--valid", str(bad), "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "Traceback" not in err and len(err.splitlines()) == 1
    assert f"{bad}:2: not valid UTF-8" in err
