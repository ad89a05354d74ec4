"""A Tune trial's Ray Train workers report their placement group, and the sweep removes it when the trial
ends (hades_ray/train/trial_groups.py: Ray 2.60 leaves it reserved without the State API, and a sweep of
more than four Train trials on two cores then waits forever; jobs/results/bench_frozen_sweep.md)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytestmark = pytest.mark.ray


def _state(ray, group) -> str:
    return ray.util.placement_group_table(group)["state"]


def test_a_worker_reports_the_group_it_runs_in_and_the_sweep_removes_it_when_the_trial_ends(ray_local):
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    from hades_ray.train.loop import GROUP_KEY, group_figure
    from hades_ray.train.trial_groups import ReleaseTrainGroups

    ray = ray_local
    assert group_figure() == {}  # the driver runs in no placement group
    group = ray.util.placement_group([{"CPU": 0.01}])
    ray.get(group.ready(), timeout=60)
    in_group = PlacementGroupSchedulingStrategy(placement_group=group)
    reported = ray.get(ray.remote(num_cpus=0.01)(group_figure).options(scheduling_strategy=in_group).remote())
    assert reported == {GROUP_KEY: group.id.hex()}

    release, trial = ReleaseTrainGroups(), SimpleNamespace(trial_id="t0")
    release.on_trial_result(0, [], trial, {"epoch": 0, **reported})
    assert _state(ray, group) == "CREATED"  # a running trial keeps its workers
    release.on_trial_complete(1, [], trial)
    assert _state(ray, group) == "REMOVED"
    release.on_trial_error(2, [], trial)  # ended twice, or a group already gone: nothing to do


def test_a_trial_that_errs_frees_its_group_too(ray_local):
    from hades_ray.train.loop import GROUP_KEY
    from hades_ray.train.trial_groups import ReleaseTrainGroups

    ray = ray_local
    group = ray.util.placement_group([{"CPU": 0.01}])
    ray.get(group.ready(), timeout=60)
    release, trial = ReleaseTrainGroups(), SimpleNamespace(trial_id="t1")
    release.on_trial_result(0, [], trial, {GROUP_KEY: group.id.hex()})
    release.on_trial_error(1, [], trial)
    assert _state(ray, group) == "REMOVED"
