"""`hades-ray tune --space` over head configurations of a frozen backbone, as a user runs it: every trial
finishes and reports every epoch to Tune, the trials read one span-representation store (made once by the
sweep's driver), each trial trains the head in its own process (no Ray Train run), and the best
configuration is the best trial's."""

from __future__ import annotations

import json

import pytest

from hades_ray.cli import main
from hades_ray.config import load_config
from hades_ray.detect.synthetic import toy_instances
from hades_ray.io.hades_format import write_instances

pytestmark = pytest.mark.ray

SPACE = """\
detect.mlp_layers: {grid_search: [1, 2]}
detect.lr: {grid_search: [1.0e-3, 1.0e-2]}
detect.freeze: all
"""
SETTINGS = ["detect.backbone=local:mlm", "detect.epochs=2", "detect.batch_size=8", "detect.window=32"]


@pytest.mark.slow  # a Tune sweep (20 s on 2 cores); make test keeps its trial-placement checks
def test_a_head_sweep_reads_one_store_and_trains_each_head_in_its_trial(tmp_path, micro_home, ray_local, capsys):
    train = write_instances(toy_instances(32, seed=1), tmp_path / "train.jsonl")
    valid = write_instances(toy_instances(12, seed=2), tmp_path / "valid.jsonl")
    (tmp_path / "space.yaml").write_text(SPACE)
    out = tmp_path / "sweep"
    args = ["tune", "--train", str(train), "--valid", str(valid), "--output", str(out), "--num-samples", "1",
            "--space", str(tmp_path / "space.yaml")]  # fmt: skip
    for setting in SETTINGS:
        args += ["--set", setting]
    assert main(args) == 0

    best = json.loads((out / "best.json").read_text())
    trials = best["trials"]
    assert len(trials) == 4 and not [t for t in trials if t["error"]]
    assert {(t["config"]["detect.mlp_layers"], t["config"]["detect.lr"]) for t in trials} == {
        (1, 1e-3), (1, 1e-2), (2, 1e-3), (2, 1e-2)
    }  # fmt: skip
    assert all(t["epochs"] is not None for t in trials)  # each trial reported its epochs to Tune
    assert best["best_score"] == max(t["selection_score"] for t in trials)  # each trial's last report
    # One store per file for the sweep's one view, made by the driver before any trial ran.
    (made,) = best["span_reps"]
    assert {made["train"]["shards_made_now"], made["valid"]["shards_made_now"]} == {1}
    assert len(list((tmp_path / "_reps").iterdir())) == 2
    # The heads trained in their trials' processes: no Ray Train run was started for any of them.
    assert not list((out / "train_runs").glob("train-*"))
    assert "best validation" in capsys.readouterr().out


def test_a_trial_takes_the_cpus_it_trains_on():
    from hades_ray.train.tune import trial_resources

    base = load_config(overrides=[*SETTINGS, "detect.worker_cpus=2"]).to_dict()
    cpu = lambda trial: trial_resources(base, trial).required_resources.get("CPU", 0)  # noqa: E731
    assert cpu({"detect.freeze": "all"}) == 2  # the head trains in the trial's own process
    assert cpu({"detect.freeze": "none"}) == 0  # its Ray Train workers hold the CPUs
    assert cpu({"detect.freeze": "all", "detect.workers": 2}) == 0  # data-parallel: Ray Train
    assert cpu({"detect.freeze": "all", "detect.reuse_frozen": False}) == 0


def test_a_sweep_of_heads_alone_reuses_its_trial_processes_and_one_with_ray_train_does_not(tmp_path):
    from ray import tune

    from hades_ray.train.space import load_space
    from hades_ray.train.tune import default_space, heads_only

    config = load_config(overrides=SETTINGS)
    (tmp_path / "space.yaml").write_text(SPACE)
    heads = load_space(tmp_path / "space.yaml", config.to_dict())
    assert heads_only(config, heads)
    assert not heads_only(config, default_space())  # freeze last_layer/none: Ray Train trials
    assert not heads_only(load_config(overrides=[*SETTINGS, "detect.reuse_frozen=false"]), heads)
    assert not heads_only(config, {**heads, "detect.workers": tune.randint(1, 3)})  # uncountable: not sure
