"""The driver's passes over a finished output do not grow with its shards (on moto's S3 server and
a local disk): every marker is read at most once a run (none, once the driver's roll-up holds them),
the summary is merged from the writers' stats rows and the skipped shards' markers, a merged view
that is already current is not rewritten, and above ``VIEW_MAX_BYTES`` it is not written at all, the
summary naming its parts. The results are those a full re-read would give."""

import json
import time

import pytest

from hades_ray.pipeline import executor, storage
from hades_ray.pipeline.executor import Executor
from hades_ray.pipeline.shards import ROLL_UP, load_markers, marker_text
from tests.pipeline.test_job import LINES, word_count_job

SKIP = ("timings", "shards")


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_text("\n".join(LINES * 4) + "\n")  # 20 lines: 10 shards of 2
    return str(path)


@pytest.fixture(params=["local", "s3"])
def output(request, tmp_path):
    if request.param == "local":
        return str(tmp_path / "out")
    request.getfixturevalue("s3")
    return f"s3://hades/driver/{request.node.name}".replace("[", "-").replace("]", "")


class Reads:
    """Which marker files and view parts were read, and which views written, while a block runs."""

    def __init__(self, monkeypatch):
        self.markers, self.concatenated = [], []
        read, concatenate = storage.read_text, storage.concatenate

        def read_text(path):
            if "/_markers/part-" in str(path):
                self.markers.append(str(path))
            return read(path)

        def concat(parts, target):
            self.concatenated.append(str(target))
            return concatenate(parts, target)

        monkeypatch.setattr(storage, "read_text", read_text)
        monkeypatch.setattr(storage, "concatenate", concat)


def test_a_rerun_reads_no_marker_twice_and_rewrites_no_current_view(source, output, monkeypatch):
    first = Executor(kind="local").run(word_count_job(source, output))
    view = storage.read_bytes(f"{output}/counts.jsonl")
    time.sleep(1.1)  # S3 times have 1 s resolution: a marker of the roll-up's second is read, never trusted
    reads = Reads(monkeypatch)
    again = Executor(kind="local").run(word_count_job(source, output))
    assert again["shards"] == {"total": 10, "processed_now": 0, "skipped_finished": 10}
    assert {k: v for k, v in again.items() if k not in SKIP} == {k: v for k, v in first.items() if k not in SKIP}
    assert again["timings"]["stage_actors"] == first["timings"]["stage_actors"]
    assert len(reads.markers) == len(set(reads.markers)) <= 10  # markers as new as the roll-up are read
    assert reads.concatenated == [] and storage.read_bytes(f"{output}/counts.jsonl") == view
    reads.markers.clear()
    Executor(kind="local").run(word_count_job(source, output))
    assert reads.markers == []  # the roll-up holds every marker, unchanged since


def test_markers_changed_or_added_since_the_roll_up_are_read_and_a_forced_run_rewrites_the_views(
    source, output, monkeypatch
):
    Executor(kind="local").run(word_count_job(source, output))
    time.sleep(1.1)
    Executor(kind="local").run(word_count_job(source, output))  # its roll-up is newer than every marker
    markers, rolled_up = load_markers(output)
    assert rolled_up and sorted(markers) == list(range(10))
    changed = {**markers[3], "counts": {"lines": 2, "words": 1000}}
    storage.write(f"{output}/_markers/part-00003.json", marker_text(changed))
    reads = Reads(monkeypatch)
    summary = Executor(kind="local").run(word_count_job(source, output))
    assert reads.markers == [f"{output}/_markers/part-00003.json"]
    assert summary["words"] == 40 - markers[3]["counts"]["words"] + 1000
    forced = Executor(kind="local", force=True).run(word_count_job(source, output))
    assert forced["words"] == 40 and reads.concatenated == [f"{output}/counts.jsonl"]
    lines = storage.read_text(f"{output}/counts.jsonl").splitlines()
    assert len(lines) == 16 and json.loads(lines[0]) == {"text": LINES[0], "words": 3}


def test_a_deleted_roll_up_means_each_marker_is_read_once(source, output, monkeypatch):
    first = Executor(kind="local").run(word_count_job(source, output))
    storage.delete(f"{output}/_markers/{ROLL_UP}")
    reads = Reads(monkeypatch)
    again = Executor(kind="local").run(word_count_job(source, output))
    assert sorted(reads.markers) == sorted(set(reads.markers)) and len(reads.markers) == 10
    assert again["words"] == first["words"] == 40


def test_a_view_larger_than_the_limit_is_not_merged_and_the_summary_names_its_parts(source, output, monkeypatch):
    Executor(kind="local").run(word_count_job(source, output))
    assert storage.exists(f"{output}/counts.jsonl")
    monkeypatch.setattr(executor, "VIEW_MAX_BYTES", 100)
    summary = Executor(kind="local").run(word_count_job(source, output))
    size = sum(len(storage.read_bytes(p)) for p in storage.list_files(f"{output}/counts"))
    assert summary["views"] == {
        "counts": {"merged": False, "parts": f"{output}/counts/part-*.jsonl", "files": 10, "bytes": size}
    }
    assert not storage.exists(f"{output}/counts.jsonl")  # an older merge is not left to look current
    assert json.loads(storage.read_text(f"{output}/summary.json"))["views"] == summary["views"]
