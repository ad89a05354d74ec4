"""A stage's contract: the executor refuses a stage the cluster cannot place, naming it, and a stage
that gets a batch without its input columns or returns outputs unlike its declaration raises
StageError naming the stage."""

import pyarrow as pa
import pytest

from hades_ray.pipeline.errors import ResourceError
from hades_ray.pipeline.executor import check_resources
from hades_ray.pipeline.stage import Resources, Stage, StageError


class _GpuStage(Stage):
    name = "replace"


def test_resource_check_names_the_stage_and_what_is_missing():
    cpu_node = [{"Alive": True, "Resources": {"CPU": 2.0}}]
    with pytest.raises(ResourceError, match="'replace' needs 1 CPU \\+ 1 GPU"):
        check_resources([_GpuStage(Resources(num_cpus=1, num_gpus=1))], cpu_node)
    with pytest.raises(ResourceError, match="3.25 CPU"):
        check_resources([_GpuStage(Resources(num_cpus=1, min_actors=3))], cpu_node)
    check_resources([_GpuStage(Resources(num_cpus=0.5, min_actors=2))], cpu_node)


class _Lengths(Stage):
    """Declares ``text`` in and ``length`` (int32) out; ``result`` is what ``process`` returns."""

    name = "lengths"
    inputs = {"text": pa.string()}
    outputs = {"length": pa.int32()}

    def __init__(self, result):
        super().__init__(Resources(batch_size=2))
        self.result = result

    def process(self, batch: pa.Table) -> dict:
        return self.result(batch)


def test_a_stage_works_when_its_contract_holds():
    stage = _Lengths(lambda batch: {"length": [len(t) for t in batch.column("text").to_pylist()]})
    out = stage(pa.table({"id": ["a", "b", "c"], "text": ["x", "yy", "zzz"]}))
    assert out.column("id").to_pylist() == ["a", "b", "c"]  # columns it does not touch pass through
    assert out.column("length").to_pylist() == [1, 2, 3]
    assert out.schema.field("length").type == pa.int32()


def test_a_batch_without_an_input_column_is_a_stage_error_naming_the_stage():
    stage = _Lengths(lambda batch: pytest.fail("process must not run on a batch without its inputs"))
    with pytest.raises(StageError, match=r"stage 'lengths' needs columns \['text'\]"):
        stage(pa.table({"id": ["a"], "body": ["x"]}))


def test_a_missing_declared_output_is_a_stage_error_naming_the_stage():
    stage = _Lengths(lambda batch: {"size": [1] * batch.num_rows})  # not the declared "length"
    with pytest.raises(StageError, match="stage 'lengths' did not produce its declared column 'length'"):
        stage(pa.table({"text": ["x", "y"]}))


def test_an_output_of_the_wrong_type_is_a_stage_error_naming_the_stage():
    stage = _Lengths(lambda batch: {"length": ["one"] * batch.num_rows})  # strings, declared int32
    with pytest.raises(StageError, match="stage 'lengths': an output column does not match its declared type"):
        stage(pa.table({"text": ["x", "y"]}))
