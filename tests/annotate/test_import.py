"""Import validation (line numbers, quarantine), append-only imports, and escaping in exports."""

import csv
import json
from pathlib import Path

import pytest

from hades_ray.annotate.export import export_items
from hades_ray.annotate.judgments import JudgmentError, import_judgments
from hades_ray.pool.rounds import load_judgments
from hades_ray.config import load_config

TEXT = 'Ann & "Bob" <b>met</b> in ===Rome=== .'
ORIGINAL = '=cmd Ann & "Bob" <b>met</b> in Paris .'


@pytest.fixture
def workdir(tmp_path):
    batch = tmp_path / "round-000" / "batch.jsonl"
    batch.parent.mkdir(parents=True)
    items = []
    for k in range(3):
        items.append(
            {
                "replaced": TEXT,
                "replaced_ids": [5, 5],
                "hallucination": -1,
                "id": f"i{k}",
                "doc_id": "d",
                "original_span": "Paris",
                "replacement": "Rome",
                "original_text": ORIGINAL,
                "original_start": ORIGINAL.index("Paris"),
                "original_end": ORIGINAL.index("Paris") + 5,
            }
        )
    batch.write_text("".join(json.dumps(i) + "\n" for i in items))
    return tmp_path


def write_csv(path, rows):
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "judge_id", "label"])
        writer.writerows(rows)
    return path


def test_bad_rows_fail_with_line_numbers(workdir, tmp_path):
    config = load_config()
    path = write_csv(tmp_path / "j.csv", [["i0", "a", "H"], ["nope", "a", "H"], ["i1", "a", "maybe"], ["i0", "a", "N"]])
    with pytest.raises(JudgmentError) as error:
        import_judgments(config, workdir, 0, path)
    message = str(error.value)
    assert "line 3: unknown item 'nope'" in message and "line 4: unknown label 'maybe'" in message
    assert "line 5: judge 'a' already judged item 'i0'" in message
    assert len(load_judgments(workdir, 0)) == 0  # nothing imported


def test_skip_bad_quarantines_and_imports_append(workdir, tmp_path):
    config = load_config()
    path = write_csv(tmp_path / "j.csv", [["i0", "a", "H"], ["nope", "a", "H"], ["i1", "a", "n"]])
    report = import_judgments(config, workdir, 0, path, skip_bad=True)
    assert report["accepted"] == 2 and report["quarantined"] == 1
    bad = (workdir / "round-000" / "quarantine" / "import-001.bad.csv").read_text()
    assert "unknown item" in bad
    again = write_csv(tmp_path / "k.csv", [["i0", "a", "N"], ["i0", "b", "N"]])  # a judged i0 in import 1
    report = import_judgments(config, workdir, 0, again, skip_bad=True)
    assert report["import"] == "import-002" and report["accepted"] == 1
    assert sorted(p.name for p in (workdir / "round-000" / "judgments").glob("import-00?.csv")) == [
        "import-001.csv",
        "import-002.csv",
    ]
    assert len(load_judgments(workdir, 0)) == 3


def test_label_studio_import(workdir, tmp_path):
    export = [
        {
            "data": {"item_id": "i0"},
            "annotations": [
                {
                    "completed_by": {"id": 7, "email": "x@y"},
                    "result": [{"from_name": "label", "value": {"choices": ["H"]}}],
                },
                {"completed_by": 8, "result": [{"value": {"choices": ["N"]}}]},
                {"completed_by": 9, "was_cancelled": True, "result": []},
            ],
        },
        {"data": {"item_id": "i1"}, "annotations": [{"completed_by": 8, "result": [{"value": {"choices": ["X"]}}]}]},
    ]
    path = tmp_path / "ls.json"
    path.write_text(json.dumps(export))
    with pytest.raises(JudgmentError, match="task 2 annotation 1: unknown label 'X'"):
        import_judgments(load_config(), workdir, 0, path)
    assert import_judgments(load_config(), workdir, 0, path, skip_bad=True)["accepted"] == 2


def test_exports_escape_corpus_text(workdir):
    config = load_config()
    report = export_items(config, workdir, 0, "label-studio")
    tasks = json.loads(Path(report["files"][0]).read_text())
    html = tasks[0]["data"]["perturbed_html"]
    assert "&lt;b&gt;met&lt;/b&gt;" in html and "&amp;" in html and "&quot;Bob&quot;" in html
    assert "<mark>Rome</mark>" in html and "<mark>Paris</mark>" in tasks[0]["data"]["original_html"]
    assert tasks[0]["data"]["judges_needed"] == 4
    report = export_items(config, workdir, 0, "csv")
    assert report["export"] == "export-002"  # earlier exports are kept
    with open(report["files"][0], newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 3 and rows[0]["perturbed_text"].endswith("[[Rome]] .")
    assert rows[0]["original_text"].startswith("'=cmd")  # spreadsheet formula neutralized


def _set_batch(workdir, **changes):
    path = workdir / "round-000" / "batch.jsonl"
    items = [{**json.loads(line), **changes} for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(i) + "\n" for i in items))


@pytest.mark.parametrize(
    "prefix", ["=", "+", "-", "@", "\t=", "\r=", "\t", "\r", " =", "\uff1d", "\uff0b", "\uff0d", "\uff20"]
)
def test_every_csv_cell_is_guarded(workdir, prefix):
    from hades_ray.io.safe_csv import needs_guard

    text = prefix + "cmd Ann met in Paris ."
    _set_batch(workdir, original_text=text, original_start=text.index("Paris"), original_end=text.index("Paris") + 5)
    _set_batch(workdir, replacement=prefix + "Rome", original_span=prefix + "Paris")
    report = export_items(load_config(), workdir, 0, "csv")
    with open(report["files"][0], newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    cells = [v for row in rows for v in row.values()]
    assert not [c for c in cells if needs_guard(c)], "a cell a spreadsheet would run"
    assert rows[0]["original_html"].startswith("'") and rows[0]["item_id"] == "i0"  # html guarded, ids as they are


def test_an_item_id_that_needs_a_guard_is_refused_not_altered(workdir):
    _set_batch(workdir, id="-i0")
    with pytest.raises(JudgmentError, match="item id '-i0' starts with '-'"):
        export_items(load_config(), workdir, 0, "csv")
    assert not list((workdir / "round-000").rglob("export-*"))
