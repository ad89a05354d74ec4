"""Which sweeps may be resumed: only those this tool created and recorded, unchanged since, with the
settings and data of the run that continues them.

Resuming a Ray Tune sweep unpickles its ``tuner.pkl`` and trial states, which runs whatever code they
hold (Ray's ``Tuner.restore`` warns: trusted folders only). So a rerun of ``hades-ray tune`` continues an
unfinished sweep only when (1) a record of it exists under ``$HADES_RAY_HOME/tune_runs/``, written when
this tool created the sweep, (2) the record names the settings and data digest of this run (``--force``
starts a sweep made otherwise again, never unpickling it), (3) ``tuner.pkl`` still has the digest
recorded then, and (4) every file of the sweep belongs to the current user and no one else can write it.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from hades_ray.errors import UserError
from hades_ray.pipeline import storage

TUNER_PKL = "tuner.pkl"  # the file Ray Tune writes when a Tuner is created (ray/tune/impl/tuner_internal.py)


class ResumeRefused(UserError):
    """A sweep folder that a rerun must not unpickle."""


def _record_path(output: Path) -> Path:
    from hades_ray.models.registry import hades_home

    key = hashlib.sha256(str(output.resolve()).encode("utf-8")).hexdigest()[:32]
    return hades_home() / "tune_runs" / f"{key}.json"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def record_sweep(output: Path, experiment: Path, made_with: str = "") -> Path:
    """Remember a sweep this tool just created (its ``tuner.pkl`` exists from here on) and the digest of
    the settings and data it was made with."""
    record = {
        "output": str(output.resolve()),
        "experiment": str(experiment.resolve()),
        "made_with": made_with,
        "tuner_pkl_sha256": _digest(experiment / TUNER_PKL),
    }
    path = _record_path(output)
    storage.write(path, json.dumps(record, indent=2) + "\n")
    return path


def check_resumable(output: Path, experiment: Path, made_with: str = "") -> None:
    """Raise ``ResumeRefused`` unless the sweep in ``experiment`` may be unpickled and continued by a run
    whose settings and data have the digest ``made_with``."""
    path = _record_path(output)
    if not (experiment / TUNER_PKL).is_file():
        raise ResumeRefused(
            f"{experiment}: no sweep to continue (no {TUNER_PKL}); rerun with --force to start a new one there"
        )
    if not path.is_file():
        raise ResumeRefused(
            f"{output}: no record that hades-ray tune created this sweep (looked for {path}); not resuming, "
            "since resuming unpickles its files. Start a new sweep in a new --output, or here with --force"
        )
    record = json.loads(path.read_text(encoding="utf-8"))
    if record.get("experiment") != str(experiment.resolve()):
        raise ResumeRefused(f"{output}: the record names another sweep ({record.get('experiment')}); not resuming")
    if record.get("made_with") != made_with:
        raise ResumeRefused(
            f"{experiment}: an unfinished sweep made with other settings or data; rerun with --force to start "
            "it again with these, or choose a new --output"
        )
    if record.get("tuner_pkl_sha256") != _digest(experiment / TUNER_PKL):
        raise ResumeRefused(f"{experiment / TUNER_PKL} changed since hades-ray tune wrote it; not resuming")
    _check_private(experiment)


def _check_private(folder: Path) -> None:
    uid, gid = os.getuid(), os.getgid()
    for path in [folder, *folder.rglob("*")]:
        info = path.lstat()
        # Group-writable is fine for the user's own group (umask 002 with per-user groups).
        group_writes = info.st_mode & stat.S_IWGRP and info.st_gid != gid
        if info.st_uid != uid or group_writes or info.st_mode & stat.S_IWOTH or stat.S_ISLNK(info.st_mode):
            raise ResumeRefused(
                f"{path}: owned by another user, writable by others, or a link; not resuming a sweep "
                "whose files someone else could have changed"
            )
