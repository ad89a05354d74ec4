"""The guard benchmark's page (``guard.report``) from the last stored report: every table and column,
a reading sentence per figure group, and the history of runs carried with the last run appended."""

from __future__ import annotations

import json
from pathlib import Path

from hades_ray.guard.report import ARMS, HISTORY_ARMS, NAMES, carried_history, markdown, reading
from hades_ray.markdown import page, spec_table

STORED = Path(__file__).resolve().parents[2] / "jobs" / "results" / "retired" / "bench_guard.json"


def test_the_page_shows_every_arm_table_and_reading():
    report = json.loads(STORED.read_text())
    report["reading"] = reading(report)
    text = markdown(report, "a test machine")
    assert text.startswith("# Online guard benchmark\n\nMachine: a test machine;") and text.endswith("s.\n")
    header = next(line for line in text.splitlines() if line.startswith("| |"))
    assert all(f" {NAMES[arm]} " in header for arm in ARMS)
    for section in ("## Independent check", "## Detectors (trained in this run)", "## What this means"):
        assert section in text
    assert all(line in text for line in report["reading"]) and len(report["reading"]) == 6
    assert "| arm | overhead | overhead in CPU time | floor |" in text


def test_the_history_carries_the_last_run_under_its_label(tmp_path):
    last = {"label": "before", "history": [{"run": "older", "guarded": 2.0}]}
    last |= {f"overhead_{k}": 1.234 for k in HISTORY_ARMS}
    path = tmp_path / "bench_guard.json"
    path.write_text(json.dumps(last))
    assert carried_history(path) == [
        {"run": "older", "guarded": 2.0},
        {"run": "before", **dict.fromkeys(HISTORY_ARMS, 1.23)},
    ]
    assert carried_history(tmp_path / "absent.json") == []


def test_a_page_of_blocks_and_a_spec_table():
    table = spec_table({"name": lambda r: r[0], "n": lambda r: f"{r[1]:,}"}, [("a", 1000)], align="lr")
    assert table == ["| name | n |", "|---|---:|", "| a | 1,000 |"]
    assert page("# T", None, table, "end") == "# T\n\n| name | n |\n|---|---:|\n| a | 1,000 |\n\nend\n"
