"""A seeded slice of the fault campaign (tests/pipeline/chaos.py; ``make chaos`` runs all of it): the
perturbation job under object-store errors and resets, a store outage, a full disk, a killed driver, and a
killed task worker and stage actor (one run; the node removal is make test-cluster's scenario). After each
run and its reruns every input row is there exactly once and unchanged, no part lacks its marker, nothing
is half-written, and a run that could not go on said why in one line."""

import json
import os

import pytest

from tests.pipeline import chaos

pytest.importorskip("moto")
CLEAN = {"lost": 0, "duplicated": 0, "corrupted": 0, "unaccounted": 0, "quarantine_mismatch": 0,
         "unmarked_parts": 0, "half_written": 0, "summary_read": 0}  # fmt: skip


@pytest.fixture(scope="module")
def source(tmp_path_factory, micro_home):
    path = tmp_path_factory.mktemp("chaos_in") / "leads.jsonl"
    return str(path), chaos.write_input(path)


@pytest.fixture(scope="module")
def reference(source, tmp_path_factory):
    """The fault-free run's kept rows, which every faulted run must reproduce."""
    output = str(tmp_path_factory.mktemp("chaos_ref") / "out")
    code, stderr = chaos.run_in_process(chaos.args(source[0], output))
    assert code == 0, stderr[-2000:]
    return {r["doc_id"]: chaos.same_row(r) for r in chaos.pool_rows(output)}


def clean(outcome: chaos.Outcome, source, reference) -> dict:
    result = chaos.audit(outcome.output, source[1], reference)
    assert {k: result[k] for k in CLEAN} == CLEAN, (outcome.row(), result)
    assert all(line.startswith(chaos.ERROR_PREFIX) for line in outcome.errors), outcome.errors
    return result


@pytest.mark.parametrize("seed", [11])
def test_store_errors_and_resets_are_retried_and_the_run_goes_on(source, reference, s3, seed):
    port = int(s3["AWS_ENDPOINT_URL"].rsplit(":", 1)[1])
    outcome = chaos.store_faults(source[0], "s3://hades/chaos", port, seed, outage=False)
    assert sum(outcome.faults.values()) >= 2 and outcome.errors == [], outcome.row()
    assert outcome.store_retries >= sum(outcome.faults.values())
    clean(outcome, source, reference)


@pytest.mark.slow  # a store outage and a rerun (20 s on 2 cores); make test keeps the store-error slice
def test_a_store_outage_stops_the_run_in_one_line_and_the_rerun_finishes(source, reference, s3):
    port = int(s3["AWS_ENDPOINT_URL"].rsplit(":", 1)[1])
    outcome = chaos.store_faults(source[0], "s3://hades/chaos", port, 13, outage=True)
    assert outcome.reruns >= 1 and "kept failing through every retry" in outcome.errors[0], outcome.row()
    clean(outcome, source, reference)


def test_a_full_disk_says_so_in_one_line_and_the_rerun_finishes(source, reference, tmp_path):
    if not chaos.can_mount():
        pytest.skip("mounting a small tmpfs needs root")
    outcome = chaos.disk_full(source[0], tmp_path / "disk", 14, lambda out: chaos.audit(out, source[1], reference))
    assert outcome.faults["disk_full"] == 1, outcome.note
    assert "no space left on the device" in outcome.errors[0], outcome.row()
    assert {k: outcome.audit[k] for k in CLEAN} == CLEAN, outcome.row()


@pytest.mark.slow  # a driver killed and rerun (17 s on 2 cores); make chaos runs this scenario with every other
def test_a_driver_killed_mid_run_is_rerun_and_finishes(source, reference, tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    outcome = chaos.driver_kill(source[0], str(tmp_path / "out"), 15, env)
    clean(outcome, source, reference)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["read"] == source[1]


@pytest.mark.slow
@pytest.mark.ray
def test_a_killed_worker_and_a_killed_actor_lose_nothing(source, reference, ray_local, tmp_path):
    # One run, two faults (a task worker's process, then a stage actor's): each alone is make chaos's.
    outcome = chaos.process_kill(source[0], str(tmp_path / "out"), 16, ("worker_kill", "actor_kill"))
    assert outcome.faults == {"worker_kill": 1, "actor_kill": 1}, outcome.row()
    clean(outcome, source, reference)
