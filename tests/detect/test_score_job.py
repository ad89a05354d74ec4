"""predict's and evaluate's scoring job (hades_ray/detect/score_job.py), in-process with a stand-in
detector stage: the scored lines, batches of the same instances whatever else the file holds, resume
from the markers, the one stale policy, and a parts folder that outlives only an interrupted run."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pyarrow as pa
import pytest

from hades_ray.config import load_config
from hades_ray.detect import score_job
from hades_ray.detect.data import LoadReport, numbered_instances
from hades_ray.detect.detector import Detector
from hades_ray.detect.score_job import predicted_records, score_arrays, score_rows, scoring_folder
from hades_ray.detect.scoring import SCORE_OUTPUTS, SPAN_INPUTS
from hades_ray.pipeline.executor import Executor
from hades_ray.pipeline.shards import StaleShardError, part_name
from hades_ray.pipeline.stage import Resources, Stage


class _SpanLength(Stage):
    """p(H) = span length / 10; records each batch's first words, so a test sees what was scored."""

    name = "detector"
    inputs = SPAN_INPUTS
    outputs = SCORE_OUTPUTS

    def __init__(self, seen: list):
        super().__init__(Resources(batch_size=2))
        self.seen = seen

    def process(self, batch: pa.Table) -> dict:
        self.seen.append([w[0] for w in batch.column("words").to_pylist()])
        p = [(e - s + 1) / 10 for s, e in zip(batch.column("start").to_pylist(), batch.column("end").to_pylist())]
        return {"p_hallucination": p, "pred": [int(x >= 0.2) for x in p]}


@dataclasses.dataclass(frozen=True)
class _Stub(Detector):
    seen: list = dataclasses.field(default_factory=list)

    def stages(self, detect, num_gpus: float = 0.0) -> list:
        return [_SpanLength(self.seen)]


def _line(first: str, span: int, label: int) -> str:
    words = [first, *(f"w{i}" for i in range(span)), "end"]
    return json.dumps({"replaced": " ".join(words), "replaced_ids": [1, span], "hallucination": label})


@pytest.fixture
def setup(tmp_path, monkeypatch):
    monkeypatch.setattr(score_job, "SHARD_ROWS", 2)
    (tmp_path / "detector").mkdir()
    (tmp_path / "detector" / "detector.json").write_text("{}")
    lines = [_line("a", 1, 1), "", _line("u", 2, -1), "{not json", _line("b", 2, 0), _line("c", 3, 1)]
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(lines + [_line("d", 1, 0)]) + "\n")
    return _Stub(tmp_path / "detector", {}), load_config(), data, tmp_path / "parts"


def _rows(data: Path, labelled_only: bool) -> list[int]:
    return [row for row, _ in numbered_instances(data, True, LoadReport(), labelled_only)]


def test_evaluate_scores_the_labelled_lines_in_shards_of_labelled_instances(setup):
    detector, config, data, folder = setup
    rows = _rows(data, labelled_only=True)
    scores = list(score_rows(detector, config.detect, data, rows, folder, Executor("local"), True))
    assert [(r, p, pred) for r, p, pred in scores] == [(0, 0.1, 0), (4, 0.2, 1), (5, 0.3, 1), (6, 0.1, 0)]
    assert detector.seen == [["a", "b"], ["c", "d"]]  # the unlabelled and bad lines never split a batch
    assert sorted(p.name for p in (folder / "scores").iterdir()) == ["part-00000.parquet", "part-00001.parquet"]


def test_predict_records_keep_the_input_fields_in_order(setup):
    detector, config, data, folder = setup
    rows = _rows(data, labelled_only=False)
    scores = score_rows(detector, config.detect, data, rows, folder, Executor("local"), False)
    records = list(predicted_records(data, scores))
    assert [(r["replaced"].split()[0], r["hallucination"], r["p_hallucination"]) for r in records] == [
        ("a", 1, 0.1),
        ("u", -1, 0.2),
        ("b", 0, 0.2),
        ("c", 1, 0.3),
        ("d", 0, 0.1),
    ]


def test_an_interrupted_run_resumes_and_other_settings_stop_it_unless_forced(setup):
    detector, config, data, folder = setup
    rows = _rows(data, labelled_only=True)
    first = score_arrays(score_rows(detector, config.detect, data, rows, folder, Executor("local"), True))
    (folder / "_markers" / f"{part_name(1)}.json").unlink()  # shard 1 never finished
    detector.seen.clear()
    again = score_arrays(score_rows(detector, config.detect, data, rows, folder, Executor("local"), True))
    assert detector.seen == [["c", "d"]]  # only the unfinished shard ran
    assert all((a == b).all() for a, b in zip(first, again))
    other = dataclasses.replace(config.detect, score_batch_size=config.detect.score_batch_size + 1)
    with pytest.raises(StaleShardError, match="--force"):
        score_rows(detector, other, data, rows, folder, Executor("local"), True)
    score_rows(detector, other, data, rows, folder, Executor("local", force=True), True)


def test_a_named_parts_folder_outlives_only_a_failed_run(tmp_path):
    with scoring_folder(tmp_path / "done.parts") as folder:
        folder.mkdir()
    assert not (tmp_path / "done.parts").exists()
    with pytest.raises(RuntimeError), scoring_folder(tmp_path / "failed.parts") as folder:
        folder.mkdir()
        raise RuntimeError("interrupted")
    assert (tmp_path / "failed.parts").is_dir()
