"""A rerun of `hades-ray tune` continues an unfinished sweep only when this tool created and recorded it,
with the same settings and data, unchanged and private: resuming unpickles the sweep's files. One made
otherwise stops the command, naming --force (the one override: no --resume flag)."""

from __future__ import annotations

import os

import pytest

from hades_ray.cli import main
from hades_ray.train.tune import EXPERIMENT
from hades_ray.train.tune_record import ResumeRefused, check_resumable, record_sweep


def _trivial(config):
    return {"score": config["a"]}


@pytest.fixture
def sweep(tmp_path):
    """A real Tuner's folder (the Tuner writes tuner.pkl when created; no cluster needed), recorded."""
    from ray import tune

    output = tmp_path / "out"
    tune.Tuner(
        _trivial,
        param_space={"a": tune.grid_search([1, 2])},
        run_config=tune.RunConfig(name=EXPERIMENT, storage_path=str(output)),
    )
    record_sweep(output, output / EXPERIMENT)
    return output


def test_a_recorded_unchanged_sweep_may_resume(sweep):
    from ray import tune

    experiment = sweep / EXPERIMENT
    check_resumable(sweep, experiment)  # no ResumeRefused
    assert tune.Tuner.can_restore(str(experiment))  # and what a rerun goes on to restore is a sweep Ray continues
    (experiment / "tuner.pkl").chmod(0o664)  # writable by the user's own group only (umask 002): still theirs
    check_resumable(sweep, experiment)


def test_an_unrecorded_sweep_is_refused(sweep, tmp_path):
    copy = tmp_path / "copy"
    os.rename(sweep, copy)
    with pytest.raises(ResumeRefused, match="no record that hades-ray tune created this sweep"):
        check_resumable(copy, copy / EXPERIMENT)


def test_a_changed_tuner_pkl_is_refused(sweep):
    (sweep / EXPERIMENT / "tuner.pkl").write_bytes(b"cos\nsystem\n(S'echo pwned'\ntR.")
    with pytest.raises(ResumeRefused, match="changed since hades-ray tune wrote it"):
        check_resumable(sweep, sweep / EXPERIMENT)


def test_files_others_can_write_are_refused(sweep):
    state = sweep / EXPERIMENT / "experiment_state.json"
    state.write_text("{}")
    state.chmod(0o666)
    with pytest.raises(ResumeRefused, match="writable by others"):
        check_resumable(sweep, sweep / EXPERIMENT)
    state.chmod(0o644)
    (sweep / EXPERIMENT / "link").symlink_to("/etc/passwd")
    with pytest.raises(ResumeRefused, match="or a link"):
        check_resumable(sweep, sweep / EXPERIMENT)


def test_a_sweep_is_continued_only_with_the_settings_it_was_recorded_with(sweep):
    record_sweep(sweep, sweep / EXPERIMENT, "settings-a")
    check_resumable(sweep, sweep / EXPERIMENT, "settings-a")  # the same settings and data: continued
    with pytest.raises(ResumeRefused, match="other settings or data; rerun with --force"):
        check_resumable(sweep, sweep / EXPERIMENT, "settings-b")


def test_cli_refuses_a_sweep_of_other_settings_and_unrecorded_folders(sweep, tmp_path, capsys):
    args = ["tune", "--train", "t.txt", "--valid", "v.txt", "--output", str(sweep)]
    assert main(args) == 2  # the folder has a sweep recorded with other settings: never continued
    err = capsys.readouterr().err
    assert "other settings or data; rerun with --force" in err and "Traceback" not in err
    with pytest.raises(SystemExit):  # no --resume flag: --force is the one override
        main([*args, "--resume"])
    assert "unrecognized arguments: --resume" in capsys.readouterr().err
    os.rename(sweep, tmp_path / "moved")
    args[-1] = str(tmp_path / "moved")
    with pytest.raises(ResumeRefused, match="no record that hades-ray tune created this sweep"):
        check_resumable(tmp_path / "moved", tmp_path / "moved" / EXPERIMENT)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "no record that hades-ray tune created this sweep" in err and "Traceback" not in err


def test_a_finished_sweep_is_returned_as_recorded_and_other_settings_stop_it(tmp_path, monkeypatch):
    from hades_ray.config import load_config
    from hades_ray.train import tune as tune_module
    from hades_ray.pipeline.shards import StaleShardError

    runs = []
    monkeypatch.setattr(tune_module, "_sweep", lambda *args: runs.append(args) or {"best_score": 0.5})
    data, output, config = tmp_path / "train.txt", tmp_path / "out", load_config()
    data.write_text("{}\n")
    assert tune_module.tune_detector(config, data, data, output) == {"best_score": 0.5}
    assert tune_module.tune_detector(config, data, data, output) == {"best_score": 0.5} and len(runs) == 1
    with pytest.raises(StaleShardError, match="the detector sweep .*rerun with --force"):
        tune_module.tune_detector(config, data, data, output, num_samples=8)
    data.write_text("{}\n{}\n")  # other data: the recorded sweep is stale too
    with pytest.raises(StaleShardError, match="the detector sweep"):
        tune_module.tune_detector(config, data, data, output)
    assert tune_module.tune_detector(config, data, data, output, force=True) == {"best_score": 0.5}  # --force
    assert len(runs) == 2 and tune_module.tune_detector(config, data, data, output) == {"best_score": 0.5}
