"""A device check's printed figures (hades_ray/plan/device.py ``check_lines``): one line per figure, NVML's
utilisation only where it was read, and a verdict that says when the documents differ."""

from __future__ import annotations

from hades_ray.plan.device import check_lines

STAGE = {"tokens_per_s": 1234.4, "model": "bert", "dtype": "float32"}


def _result(identical: int, nvml=None) -> dict:
    replace = STAGE | {"busy_share": 0.5, "nvml_utilisation": nvml, "replace_peak_mib": 2048.4}
    measured = {"replace": replace, "rank": STAGE | {"rank_peak_mib": 512}, "models": "configured", "basis": "core"}
    plan = {"device_hours": 3.5, "device_kind": "CPU core", "replace_device_hours": 2, "rank_device_hours": 1.5}
    return {
        "machine": {"cpus": 2},
        "device": "cpu",
        "measured": measured,
        "identity": {"identical": identical, "documents": 3, "byte_identical": identical == 3},
        "plan_1m_segments": plan,
        "seconds": 9.5,
        "step_seconds": {"models": 1.0, "identity": 8.5},
    }


def test_every_figure_has_its_line():
    lines = check_lines(_result(3))
    assert len(lines) == 9 and lines[0].startswith("machine: ")
    assert lines[2] == "REPLACE: 1,234 tokens/s (bert, float32)"
    assert lines[4] == "REPLACE busy share: 50% of its wall time inside model forwards"
    assert lines[5] == "peak memory: replace_peak 2,048 MiB, rank_peak 512 MiB"
    assert lines[6] == "identity: 3 of 3 documents alone vs inside the batch: byte-identical"
    assert lines[7] == "plan for 1,000,000 segments: 3.5 CPU core-hours (REPLACE 2, RANK 1.5)"
    assert lines[8] == "device check finished in 9.5 s (models 1.0 s, identity 8.5 s)"


def test_nvml_and_a_difference_are_shown():
    lines = check_lines(_result(2, nvml=0.75))
    assert lines[4].endswith("inside model forwards, NVML utilisation 75%")
    assert lines[6].endswith(": DIFFERENT")
