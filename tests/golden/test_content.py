"""The golden comparison itself: what it lets through (rounding within the tolerance, a Parquet writer's
version) and what it catches (a changed word, a float beyond the tolerance, a flipped decision)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from tests.golden import margins as margin_checks
from tests.golden.content import ATOL, RTOL, SKETCH_OVER, compare, records_of, summarize
from tests.golden.diff import compare as compare_runs


def _record(path: Path) -> dict[str, dict]:
    return {k: summarize(*v) for k, v in records_of(path, {}).items()}


def _differences(a: Path, b: Path) -> list[str]:
    ra, rb = _record(a), _record(b)
    return [line for k in ra for line in [compare(k, ra[k], rb[k])] if line]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_floats_within_the_tolerance_pass_and_beyond_it_fail(tmp_path):
    base = [{"id": "a", "p": 0.25, "words": ["x", "y"]}, {"id": "b", "p": 0.7312345678901234, "words": []}]
    near = [{**base[0], "p": 0.25 * (1 + RTOL / 2)}, base[1]]
    far = [{**base[0], "p": 0.25 * (1 + 3 * RTOL)}, base[1]]
    word = [base[0], {**base[1], "words": ["z"]}]
    a = _jsonl(tmp_path / "a.jsonl", base)
    assert _differences(a, _jsonl(tmp_path / "near.jsonl", near)) == []
    assert "outside the tolerance" in _differences(a, _jsonl(tmp_path / "far.jsonl", far))[0]
    assert "discrete content differs" in _differences(a, _jsonl(tmp_path / "word.jsonl", word))[0]


def test_parquet_is_compared_per_column_whatever_its_writer(tmp_path):
    table = pa.table({"id": ["a", "b"], "ppl": [12.5, 30.25]})
    pq.write_table(table, tmp_path / "a.parquet")
    pq.write_table(table, tmp_path / "b.parquet", compression="gzip", use_dictionary=False)  # other bytes
    assert (tmp_path / "a.parquet").read_bytes() != (tmp_path / "b.parquet").read_bytes()
    assert _differences(tmp_path / "a.parquet", tmp_path / "b.parquet") == []
    pq.write_table(table.set_column(1, "ppl", pa.array([12.5, 31.0])), tmp_path / "c.parquet")
    assert [line.split(":")[1] for line in _differences(tmp_path / "a.parquet", tmp_path / "c.parquet")] == ["ppl"]


def test_a_number_written_rounded_may_differ_in_its_last_digit(tmp_path):
    (tmp_path / "a.html").write_text('<span title="p(H) = 0.535">w</span> 1998')
    (tmp_path / "b.html").write_text('<span title="p(H) = 0.536">w</span> 1998')
    (tmp_path / "c.html").write_text('<span title="p(H) = 0.538">w</span> 1998')
    (tmp_path / "d.html").write_text('<span title="p(H) = 0.535">w</span> 1999')
    assert _differences(tmp_path / "a.html", tmp_path / "b.html") == []
    assert _differences(tmp_path / "a.html", tmp_path / "c.html")
    assert "discrete" in _differences(tmp_path / "a.html", tmp_path / "d.html")[0]  # integers are exact


def test_many_floats_are_kept_as_a_sketch_that_still_catches_a_change():
    values = [(0.001 * k, 0.0) for k in range(SKETCH_OVER * 3)]
    recorded = summarize(["x"], values)
    assert "sketch" in recorded and "floats" not in recorded
    nudged = [(v * (1 + RTOL / 2) + ATOL / 2, 0.0) for v, _ in values]
    assert compare("w", recorded, summarize(["x"], nudged)) is None
    moved = list(values)
    moved[7] = (moved[7][0] + 0.5, 0.0)
    assert "beyond the bound" in compare("w", recorded, summarize(["x"], moved))


def test_a_decision_within_the_tolerance_is_reported():
    margins = margin_checks.Margins()
    margin_checks.threshold_margins("flag", [0.2, 0.5 + 1e-9, 0.9], 0.5, margins)
    assert margins.failures() and "flag" in margins.failures()[0]
    margins = margin_checks.Margins()
    margin_checks.rank_margins([{"doc_id": "d", "candidate_ppls": [10.0, 10.0, 11.0]}], margins)  # a tie
    margin_checks.threshold_margins("flag", [0.2, 0.9, 1 - 1e-9], 0.5, margins)
    assert margins.failures() == []


def test_the_multinomial_recorder_follows_torch_and_leaves_its_draws_alone():
    probs = torch.softmax(torch.randn(4, 50, generator=torch.Generator().manual_seed(0)), dim=-1)
    torch.manual_seed(3)
    plain = torch.multinomial(probs, num_samples=1)
    torch.manual_seed(3)
    with margin_checks.recording() as margins:
        recorded = torch.multinomial(probs, num_samples=1)
    assert torch.equal(plain, recorded)
    assert margins.counts["sampling: multinomial draw"] == 4


@pytest.mark.parametrize("change", [False, True])
def test_the_byte_comparison_of_two_revisions_names_the_changed_files(tmp_path, change):
    for side in ("base", "head"):
        out = tmp_path / side
        (out / "job").mkdir(parents=True)
        (out / "golden_paths.json").write_text(json.dumps({str(out / "_inputs"): "<ROOT>"}))
        (out / "job" / "summary.json").write_text(json.dumps({"kept": 3, "timings": {"wall": len(side)}}))
        written = 0.5 if side == "base" or not change else 0.5000001
        (out / "job" / "scores.jsonl").write_text(json.dumps({"p": written, "src": str(out / "_inputs")}) + "\n")
    lines = compare_runs(tmp_path / "base", tmp_path / "head", ["job"])
    assert lines[-1] == ("0 of 1 jobs byte-identical" if change else "1 of 1 jobs byte-identical")
    assert any("changed: scores.jsonl" in line for line in lines) == change
