"""The placement groups of Ray Train runs inside Tune trials, removed when Tune ends the trial.

Tune ends a trial by killing its process as soon as the trial's last result arrives (or ASHA stops it),
and the trial's Ray Train controller dies with it before it can remove its worker group's placement group.
Ray Train (2.60) leaves that to a cleaner actor that asks the State API whether the controller is dead;
without the dashboard (``init_ray`` starts none), or with a second Ray instance on the host (the State API
then cannot tell which cluster to ask), it never learns it, so each ended trial keeps its workers' CPUs
reserved. On two cores a sweep of more than four such trials then waits forever for CPUs (measured:
``jobs/results/bench_frozen_sweep.md``). So each Train worker reports the placement group it runs in
(``train/loop.group_figure``), and the sweep's callback removes the group once its trial has ended.
"""

from __future__ import annotations

import logging

from ray import tune
from ray.util.placement_group import PlacementGroup, remove_placement_group

from hades_ray.train.loop import GROUP_KEY

log = logging.getLogger(__name__)


def remove_group(hex_id: str) -> None:
    """Remove the placement group ``hex_id`` (already removed: nothing happens)."""
    from ray._raylet import PlacementGroupID

    try:
        remove_placement_group(PlacementGroup(PlacementGroupID(bytes.fromhex(hex_id))))
    except Exception as error:  # the group went with its cluster, or is gone: nothing left to free
        log.debug("placement group %s not removed: %s", hex_id, error)


class ReleaseTrainGroups(tune.Callback):
    """Removes a trial's Ray Train placement group (from its reported results) when the trial ends."""

    def __init__(self) -> None:
        self.groups: dict[str, str] = {}

    def on_trial_result(self, iteration, trials, trial, result, **info) -> None:
        if result.get(GROUP_KEY):
            self.groups[trial.trial_id] = result[GROUP_KEY]

    def _release(self, trial) -> None:
        group = self.groups.pop(trial.trial_id, None)
        if group:
            remove_group(group)

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        self._release(trial)

    def on_trial_error(self, iteration, trials, trial, **info) -> None:
        self._release(trial)
