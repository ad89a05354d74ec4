"""The engine under every sharded job, on the smallest job there is (word counts of a text file's
lines): parts and markers per shard, one skip policy, the empty-shard placeholder, the completeness
check, the stats merge into summary.json, progress lines, and the same bytes in-process and on Ray."""

import functools
import json
import logging

import pyarrow as pa
import pytest

from hades_ray.pipeline import storage
from hades_ray.pipeline.executor import Executor
from hades_ray.pipeline.job import IncompleteShardError, ShardJob
from hades_ray.pipeline.shards import Shard, StaleShardError
from hades_ray.pipeline.stage import Resources, Stage

LINES = ["one two three", "four five", "six", "", "seven eight nine ten"]


class WordCount(Stage):
    name = "count"
    inputs = {"text": pa.string()}
    outputs = {"words": pa.int32()}

    def process(self, batch: pa.Table) -> dict:
        return {"words": [len(t.split()) for t in batch.column("text").to_pylist()]}


def plan(path: str, rows_per_shard: int, mapper) -> list[Shard]:
    total = len(storage.read_text(path).splitlines())
    return [
        Shard(k, path, "lines", lo, min(lo + rows_per_shard, total), identity="v1")
        for k, lo in enumerate(range(0, total, rows_per_shard))
    ]


def read(shard: Shard) -> pa.Table:
    lines = storage.read_text(shard.source).splitlines()[shard.first_row : shard.end_row]
    kept = [line for line in lines if line]  # a shard of blank lines reads as zero rows
    return pa.table({"text": pa.array(kept, pa.string())})


def write(output: str, index: int, table: pa.Table) -> dict:
    records = [json.dumps(r) + "\n" for r in table.select(["text", "words"]).to_pylist()]
    storage.write(storage.join(output, "counts", f"part-{index:05d}.jsonl"), "".join(records))
    return {"counts": {"lines": table.num_rows, "words": sum(table.column("words").to_pylist())}}


def word_count_job(source: str, output: str, digest: str = "d1", rows_per_shard: int = 2, **kw) -> ShardJob:
    return ShardJob(
        name="wordcount",
        output=output,
        digest=digest,
        plan=functools.partial(plan, source, rows_per_shard),
        read=read,
        stages=lambda: [WordCount(Resources(num_cpus=0.25, uses_actors=False))],
        write=functools.partial(write, output),
        views=("counts",),
        **kw,
    )


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_text("\n".join(LINES) + "\n")
    return str(path)


def test_a_job_writes_parts_markers_views_and_a_merged_summary(source, tmp_path):
    output = str(tmp_path / "out")
    summary = Executor(kind="local").run(word_count_job(source, output))
    assert summary["lines"] == 4 and summary["words"] == 10  # the writers' counts, summed over shards
    assert summary["shards"] == {"total": 3, "processed_now": 3, "skipped_finished": 0}
    assert set(summary["timings"]["stage_busy_seconds"]) == {"count"}
    markers = sorted((tmp_path / "out" / "_markers").glob("part-*.json"))
    assert [m.name for m in markers] == ["part-00000.json", "part-00001.json", "part-00002.json"]
    marker = json.loads(markers[0].read_text())
    assert marker["rows"] == 2 and marker["digest"] == "d1" and marker["worker"]["pid"] > 0
    merged = [json.loads(line)["text"] for line in (tmp_path / "out" / "counts.jsonl").read_text().splitlines()]
    assert merged == [line for line in LINES if line]
    assert json.loads((tmp_path / "out" / "summary.json").read_text()) == summary
    assert not (tmp_path / "out" / "_lock.json").exists()


def test_an_empty_shard_still_gets_its_part_and_marker(tmp_path):
    source = tmp_path / "blank.txt"
    source.write_text("a b\n\n\n")  # shard 1 (lines 2-3) has no rows once read
    output = str(tmp_path / "out")
    summary = Executor(kind="local").run(word_count_job(str(source), output))
    assert summary["shards"]["total"] == 2 and summary["lines"] == 1
    assert (tmp_path / "out" / "counts" / "part-00001.jsonl").read_text() == ""
    assert json.loads((tmp_path / "out" / "_markers" / "part-00001.json").read_text())["rows"] == 0


def test_a_rerun_skips_finished_shards_and_other_settings_stop_unless_forced(source, tmp_path):
    output = str(tmp_path / "out")
    Executor(kind="local").run(word_count_job(source, output))
    before = (tmp_path / "out" / "counts.jsonl").read_bytes()
    again = Executor(kind="local").run(word_count_job(source, output))
    assert again["shards"] == {"total": 3, "processed_now": 0, "skipped_finished": 3}
    assert (tmp_path / "out" / "counts.jsonl").read_bytes() == before
    with pytest.raises(StaleShardError, match="part-00000, part-00001, part-00002 .*--force"):
        Executor(kind="local").run(word_count_job(source, output, digest="d2"))
    # --force over part of the input would mix shards of two settings: refused too
    with pytest.raises(StaleShardError, match="part-00002 .*mixed"):
        Executor(kind="local", force=True).run(word_count_job(source, output, digest="d2", rows_per_shard=4))
    forced = Executor(kind="local", force=True).run(word_count_job(source, output, digest="d2"))
    assert forced["shards"]["processed_now"] == 3 and forced["words"] == 10


def test_a_shard_that_loses_rows_on_the_way_is_never_marked_finished(source, tmp_path):
    class Dropper(WordCount):
        def __call__(self, batch):  # breaks the contract: fewer rows out than in
            return super().__call__(batch).slice(0, 1)

    job = word_count_job(source, str(tmp_path / "out"))
    job.stages = lambda: [Dropper(Resources(uses_actors=False))]
    with pytest.raises(IncompleteShardError, match="shard 0: 1 of 2 rows"):
        Executor(kind="local").run(job)
    assert not list((tmp_path / "out" / "_markers").glob("*.json"))


def test_progress_says_rows_per_second_and_an_eta_per_shard(source, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="hades_ray.progress"):
        Executor(kind="local").run(word_count_job(source, str(tmp_path / "out"), rows_verb="lines"))
    done = [r.getMessage() for r in caplog.records if " done (" in r.getMessage()]
    assert len(done) == 3
    assert done[0].startswith("wordcount: part-00000 done (1/3 shards, 2/5 lines)")
    assert "lines/s, ETA" in done[0] and done[-1].endswith("ETA 0s")


def test_an_older_outputs_markers_folder_is_named_not_silently_redone(source, tmp_path):
    (tmp_path / "out" / "markers").mkdir(parents=True)
    (tmp_path / "out" / "markers" / "part-00000.json").write_text("{}")
    with pytest.raises(StaleShardError, match="rename that folder to _markers"):
        Executor(kind="local").run(word_count_job(source, str(tmp_path / "out")))


@pytest.mark.ray
def test_ray_writes_the_same_bytes_as_in_process(ray_local, source, tmp_path):
    Executor(kind="local").run(word_count_job(source, str(tmp_path / "local")))
    summary = Executor(kind="ray").run(word_count_job(source, str(tmp_path / "ray")))
    assert summary["words"] == 10
    for name in ("part-00000.jsonl", "part-00001.jsonl", "part-00002.jsonl"):
        assert (tmp_path / "ray" / "counts" / name).read_bytes() == (tmp_path / "local" / "counts" / name).read_bytes()
    assert (tmp_path / "ray" / "counts.jsonl").read_bytes() == (tmp_path / "local" / "counts.jsonl").read_bytes()
