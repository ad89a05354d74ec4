"""What the benchmarks share (jobs/bench_common.py) and the one table writer of their results
(hades_ray/markdown.py), without models."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hades_ray.markdown import pipe_table


def test_a_pipe_table_shows_blank_cells_blank_and_right_aligns_the_columns_it_is_told():
    lines = pipe_table(["run", "texts/s", ""], [["score", 1.5, ""], ["serve", 0, "yes"]], align="lr")
    assert lines == [
        "| run | texts/s | |",
        "|---|---:|---|",
        "| score | 1.5 | |",
        "| serve | 0 | yes |",
    ]


def test_a_child_reports_its_figures_in_one_line_and_a_failing_one_raises():
    from jobs.bench_common import child_result

    root = str(Path(__file__).resolve().parents[2])
    script = "from jobs.bench_common import print_result; print('noise'); print_result({'rss': 1.5})"
    assert child_result([sys.executable, "-c", f"import sys; sys.path.insert(0, {root!r}); {script}"]) == {"rss": 1.5}
    with pytest.raises(RuntimeError, match="exit 3"):
        child_result([sys.executable, "-c", "import sys; sys.exit(3)"])


def test_the_meters_and_page_writers_are_the_packages():
    """bench_common names them from the package on first use (tests/pipeline/test_meters.py tests them)."""
    import jobs.bench_common as common
    from hades_ray import markdown
    from hades_ray.pipeline import meters

    assert (common.Sampler, common.ForwardClock, common.measured) == (meters.Sampler, meters.ForwardClock,
                                                                     meters.measured)  # fmt: skip
    assert (common.spec_table, common.cell, common.page) == (markdown.spec_table, markdown.cell, markdown.page)
    with pytest.raises(AttributeError):
        getattr(common, "no_such_name")  # noqa: B009


def test_a_results_page_names_the_commit_that_made_it(tmp_path, monkeypatch):
    import json

    import jobs.bench_common as bench_common

    monkeypatch.setattr(bench_common, "RESULTS", tmp_path)
    commit = bench_common.made_at()
    bench_common.write_results("page", {"figure": 1}, "# A page\n\n| a |\n")
    page = (tmp_path / "page.md").read_text()
    assert page.splitlines()[:3] == ["# A page", "", f"Made at commit `{commit}`."]
    assert "| a |" in page
    assert json.loads((tmp_path / "page.json").read_text()) == {"made_at": commit, "figure": 1}
    assert commit.split()[0] != "unknown" or not (bench_common.ROOT / ".git").exists()


def test_a_jobs_function_runs_in_a_fresh_process_and_returns_its_figures():
    from jobs.bench_common import child_command, in_child, peak_rss_mib, rss_mib

    assert in_child(rss_mib) > 0 and in_child(peak_rss_mib) > 0
    command = child_command(rss_mib, 1)
    assert command[:2] == [sys.executable, "-c"]
    assert command[-2:] == ["rss_mib", "[1]"]
    with pytest.raises(RuntimeError, match="exit 1"):
        in_child(rss_mib, "not a pid", "one argument too many")
