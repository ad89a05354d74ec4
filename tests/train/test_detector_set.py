"""The detector set a guard benchmark trains (hades_ray/train/detector_set.py): a rerun on the same leads
reuses the folders its record names, and a record made on other leads, or naming a folder that is gone, is
not reused."""

from __future__ import annotations

import json

from hades_ray.train.detector_set import DETECTOR_KINDS, kept_detectors, trained_detectors


def _record(work, docs: int, names=tuple(DETECTOR_KINDS)) -> dict:
    record = {"train_docs": docs, "instances": {"train": 8, "valid": 2}}
    for name in names:
        (work / name).mkdir()
        (work / name / "detector.json").write_text("{}")
        record[name] = {"dir": str(work / name), "seconds": 1.0, "valid": {"gmean": 0.5}}
    (work / "detectors.json").write_text(json.dumps(record))
    return record


def test_a_rerun_on_the_same_leads_reuses_every_detector(tmp_path):
    record = _record(tmp_path, 12)
    # config and source are never read: nothing is perturbed or trained
    assert trained_detectors(None, tmp_path, None, 12) == record | {"reused_from": str(tmp_path)}


def test_a_record_of_other_leads_is_not_kept(tmp_path):
    _record(tmp_path, 12)
    assert kept_detectors(tmp_path, 13) == {} and kept_detectors(tmp_path, 12)["train_docs"] == 12
    assert kept_detectors(tmp_path / "none", 12) == {}
