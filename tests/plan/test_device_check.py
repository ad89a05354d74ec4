"""``make device-check`` on a CPU: the same steps as on a GPU with the micro models, one run that
prints both stages' tokens/s, REPLACE's busy share, peak memory, the identity verdict and the plan."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_device_check_prints_every_figure_and_finds_the_documents_identical(tmp_path):
    output = tmp_path / "check.json"
    args = ["--device", "cpu", "--docs", "12", "--alone", "3", "--seconds", "0.3", "--output", str(output)]
    done = subprocess.run(
        [sys.executable, str(ROOT / "jobs" / "device_check.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout
    for label in ("REPLACE:", "RANK:", "REPLACE busy share:", "peak memory:", "identity:", "plan for 1,000,000"):
        assert label in lines, lines
    result = json.loads(output.read_text())
    assert result["identity"]["byte_identical"] and result["identity"]["documents"] > 0
    replace, rank = result["measured"]["replace"], result["measured"]["rank"]
    assert replace["tokens_per_s"] > 0 and rank["tokens_per_s"] > 0
    assert 0 < replace["busy_share"] <= 1
    assert result["plan_1m_segments"]["device_hours"] > 0
