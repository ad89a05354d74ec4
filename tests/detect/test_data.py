"""Reading detector inputs: the published samples, our instances.jsonl, bad lines, unlabelled ones."""

from __future__ import annotations

import json

import pytest

from hades_ray.detect.data import LoadReport, load_labelled
from hades_ray.io.hades_format import HadesFormatError

GOOD = {"replaced": "a ===b=== c", "replaced_ids": [1, 1], "hallucination": 1}


def _write(path, lines):
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


def test_published_samples_read_unchanged(shared_data):
    for split in ("train", "valid"):
        report = LoadReport()
        instances = load_labelled(shared_data / "hades_samples" / f"{split}.txt", False, report)
        assert instances and all(i.label in (0, 1) for i in instances)
        assert all(0 <= i.start <= i.end < len(i.words) for i in instances)
    report = LoadReport()  # the published test split is unlabelled (-1): counted, not used
    path = shared_data / "hades_samples" / "test.txt"
    assert load_labelled(path, False, report) == [] and report.unlabelled[str(path)] > 0


def test_project_instances_keep_their_ids(tmp_path):
    record = {**GOOD, "id": "d1-0", "doc_id": "d1", "original_span": "x", "hallucination": -1}
    report = LoadReport()
    path = _write(tmp_path / "instances.jsonl", [record, {**GOOD, "id": "d1-1", "hallucination": 0}])
    labelled = load_labelled(path, False, report)
    assert [i.extra["id"] for i in labelled] == ["d1-1"]
    assert report.summary()["unlabelled_ignored"] == {str(path): 1}


@pytest.mark.parametrize(
    "bad, field",
    [
        ("{not json", "not valid JSON"),
        ({**GOOD, "replaced_ids": [1, 5]}, "out of range"),
        ({**GOOD, "replaced": "a b c", "replaced_ids": [2, 1]}, "reversed"),
        ({**GOOD, "hallucination": 2}, "hallucination"),
        ({**GOOD, "replaced_ids": [0, 0]}, "disagrees"),
    ],
)
def test_bad_lines_fail_naming_file_and_line(tmp_path, bad, field):
    path = _write(tmp_path / "train.txt", [GOOD, bad])
    with pytest.raises(HadesFormatError, match=f"train.txt:2: .*{field}"):
        load_labelled(path, False, LoadReport())


def test_bad_lines_quarantined_on_request(tmp_path):
    path = _write(tmp_path / "train.txt", [GOOD, "{oops", {**GOOD, "hallucination": 7}, GOOD])
    report = LoadReport()
    assert len(load_labelled(path, True, report)) == 2
    quarantine = report.write_quarantine(tmp_path / "out")
    rows = [json.loads(line) for line in quarantine.read_text().splitlines()]
    assert [r["line"] for r in rows] == [2, 3] and all(r["reason"] for r in rows)
    assert report.summary()["quarantined"] == 2
