"""Fuzz table for the judges' files (judgments CSV and Label Studio JSON), driven through the CLI as a
user runs it: each bad input exits 2 with its one-line reason naming the line or task, or with
--skip-bad is quarantined with that reason while the good rows are imported; never a traceback."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from hades_ray.annotate.judgments import import_judgments
from hades_ray.pool.rounds import load_judgments
from hades_ray.cli import main
from hades_ray.config import load_config

GOOD_CSV = b"item_id,judge_id,label\ni0,a,H\n"
GOOD_TASK = {
    "data": {"item_id": "i1"},
    "annotations": [{"completed_by": {"id": 7}, "result": [{"value": {"choices": ["N"]}}]}],
}


def _ls(annotation=None, task=None) -> bytes:
    bad = task if task is not None else {"data": {"item_id": "i2"}, "annotations": [annotation]}
    return json.dumps([GOOD_TASK, bad]).encode("utf-8")


def _choices(choices) -> dict:
    return {"completed_by": 3, "result": [{"value": {"choices": choices}}]}


# (class, file suffix, file bytes, reason that names the line or task; None: the whole file is refused)
BAD_FILES = [
    ("csv: invalid UTF-8", ".csv", GOOD_CSV + b"i1,b\xff,N\n", "line 3: not valid UTF-8"),
    ("csv: field over 128 KiB", ".csv", GOOD_CSV + b'i1,"' + b"x" * 140_000 + b'",N\n', "line 3: not a readable CSV"),
    ("csv: line over 1 MiB", ".csv", GOOD_CSV + b"i1,b," + b"N" * (1 << 20) + b"\n", "line 3: line longer than"),
    ("csv: NUL byte in an id", ".csv", GOOD_CSV + b"i1,b\x00c,N\n", "line 3: judge id 'b\\x00c' contains a control"),
    ("csv: unknown label", ".csv", GOOD_CSV + b"i1,b,maybe\n", "line 3: unknown label 'maybe'"),
    ("csv: missing judge", ".csv", GOOD_CSV + b"i1,,N\n", "line 3: missing judge_id"),
    ("csv: short row", ".csv", GOOD_CSV + b"i1\n", "line 3: missing judge_id"),
    ("csv: item id with a formula prefix", ".csv", GOOD_CSV + b"-i1,b,N\n", "line 3: item id '-i1' starts with '-'"),
    ("csv: judge id with a tab", ".csv", GOOD_CSV + b'i1,"b\tc",N\n', "line 3: judge id 'b\\tc' contains a control"),
    ("csv: tab then formula", ".csv", GOOD_CSV + b'i1,"\t=b",N\n', "line 3: judge id '=b' starts with '='"),
    ("csv: judge id =HYPERLINK", ".csv", GOOD_CSV + b'i1,"=HYPERLINK(""x"")",N\n', "line 3: judge id"),
    ("csv: full-width formula", ".csv", GOOD_CSV + "i1,\uff1dcmd,N\n".encode(), "line 3: judge id"),
    ("csv: judged twice", ".csv", GOOD_CSV + b"i0,a,N\n", "line 3: judge 'a' already judged item 'i0'"),
    ("csv: no header", ".csv", b"i0,a,H\n", None),
    ("csv: empty file", ".csv", b"", None),
    ("ls: data is a string", ".json", _ls(task={"data": "i2", "annotations": []}), "task 2: field 'data'"),
    ("ls: annotations a string", ".json", _ls(task={"data": {"item_id": "i2"}, "annotations": "x"}), "task 2: field"),
    ("ls: task a number", ".json", _ls(task=5), "task 2: task is not a JSON object"),
    ("ls: several numeric choices", ".json", _ls(_choices([1, 0])), "task 2 annotation 1: 2 choices"),
    ("ls: one numeric choice", ".json", _ls(_choices([1])), "task 2 annotation 1: choice 1 is not a string"),
    ("ls: two choices", ".json", _ls(_choices(["H", "N"])), "task 2 annotation 1: 2 choices"),
    ("ls: no choice", ".json", _ls(_choices([])), "task 2 annotation 1: 0 choices"),
    ("ls: choices a string", ".json", _ls(_choices("H")), "task 2 annotation 1: field 'result.value.choices'"),
    ("ls: result a string", ".json", _ls({"completed_by": 3, "result": "H"}), "task 2 annotation 1: field 'result'"),
    ("ls: completed_by null", ".json", _ls({**_choices(["H"]), "completed_by": None}), "has no judge"),
    ("ls: completed_by without id", ".json", _ls({**_choices(["H"]), "completed_by": {"x": 1}}), "has no judge"),
    ("ls: completed_by true", ".json", _ls({**_choices(["H"]), "completed_by": True}), "has no judge"),
    ("ls: annotation a list", ".json", _ls(["H"]), "task 2 annotation 1: annotation is not a JSON object"),
    ("ls: item id a list", ".json", _ls(task={"data": {"item_id": [1]}, "annotations": [_choices(["H"])]}), "item_id"),
    ("ls: not JSON", ".json", b"[{'data': 1}]", None),
    ("ls: invalid UTF-8", ".json", b'[{"data": {"item_id": "\xff"}}]', None),
    ("ls: deeply nested", ".json", b"[" * 100_000 + b"]" * 100_000, None),
    ("ls: an object, not a list", ".json", b'{"data": {}}', None),
]


@pytest.fixture
def workdir(tmp_path):
    batch = tmp_path / "work" / "round-000" / "batch.jsonl"
    batch.parent.mkdir(parents=True)
    item = {"replaced": "the ===cat=== sat", "replaced_ids": [1, 1], "hallucination": -1, "doc_id": "d"}
    batch.write_text("".join(json.dumps({**item, "id": f"i{k}"}) + "\n" for k in range(3)))
    return tmp_path / "work"


def _run(workdir, path, *extra):
    return main(["annotations", "import", "--workdir", str(workdir), "--round", "0", str(path), *extra])


@pytest.mark.parametrize("name,suffix,data,reason", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_file_exits_2_with_its_reason(workdir, tmp_path, capsys, name, suffix, data, reason):
    path = tmp_path / f"judgments{suffix}"
    path.write_bytes(data)
    assert _run(workdir, path) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and str(path) in err.splitlines()[0]
    if reason:
        assert reason in err
    assert len(load_judgments(workdir, 0)) == 0  # nothing imported


@pytest.mark.parametrize("name,suffix,data,reason", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_skip_bad_quarantines_the_row_and_imports_the_rest(workdir, tmp_path, capsys, name, suffix, data, reason):
    path = tmp_path / f"judgments{suffix}"
    path.write_bytes(data)
    code = _run(workdir, path, "--skip-bad")
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    if reason is None:  # nothing in the file can be read: still an error, even with --skip-bad
        assert code == 2 and str(path) in err
        return
    assert code == 0 and "1 quarantined" in out
    quarantine = (workdir / "round-000" / "quarantine" / "import-001.bad.csv").read_text(encoding="utf-8")
    assert reason.split(": ", 1)[-1][:30] in quarantine
    assert len(load_judgments(workdir, 0)) == 1  # the good row of the file


def test_the_table_covers_the_issue_and_counts(capsys):
    names = {b[0] for b in BAD_FILES}
    assert {"ls: data is a string", "ls: several numeric choices", "csv: field over 128 KiB"} <= names
    assert {"csv: invalid UTF-8", "ls: completed_by null", "ls: one numeric choice"} <= names
    with capsys.disabled():
        print(f"\njudges' files: {len(BAD_FILES)} bad-input classes")


def test_quarantine_cells_are_guarded(workdir, tmp_path):
    path = tmp_path / "j.csv"
    path.write_bytes(GOOD_CSV + b"i1,b,=1+1\n" + b"@x,c,N\n")
    import_judgments(load_config(), workdir, 0, path, skip_bad=True)
    text = (workdir / "round-000" / "quarantine" / "import-001.bad.csv").read_text(encoding="utf-8")
    assert '"\'=1+1"' in text and '"\'@x"' in text and '"=1+1"' not in text


def test_concurrent_imports_keep_every_judgment(workdir, tmp_path):
    config, files = load_config(), []
    for k in range(6):
        files.append(tmp_path / f"j{k}.csv")
        files[-1].write_text(f"item_id,judge_id,label\ni0,judge{k},H\ni1,judge{k},N\n")
    reports = []
    threads = [
        threading.Thread(target=lambda f=f: reports.append(import_judgments(config, workdir, 0, f))) for f in files
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r["import"] for r in reports) == [f"import-{k:03d}" for k in range(1, 7)]
    assert len(load_judgments(workdir, 0)) == 12
    assert not list(Path(workdir).rglob("*.tmp"))
