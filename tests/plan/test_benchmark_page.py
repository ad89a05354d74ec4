"""jobs/bench_plan.py's figures and page (hades_ray/plan/benchmark.py), from its stored results: the plans
recomputed from the runs are the ones it wrote, and the page shows every section and the before/after rows."""

from __future__ import annotations

import json
from pathlib import Path

from hades_ray.plan.benchmark import before_after, benchmark_page, corpus_plans_of

RESULTS = Path(__file__).resolve().parents[2] / "jobs" / "results" / "bench_plan.json"


def test_the_plans_come_back_from_the_runs_and_the_page_shows_each_section():
    results = json.loads(RESULTS.read_text())
    runs = results["runs"]
    plans = corpus_plans_of(runs["paper_sized"], runs["demo_counts"], {"kit_cpu_core": runs["kit"]})
    assert json.loads(json.dumps(plans)) == {"kit_cpu_core": results["plans"]["kit_cpu_core"]}
    rows = before_after(results)
    assert len(rows) == 8 and all(len(row) == 5 and row[-1].endswith("x") for row in rows)
    page = benchmark_page(results)
    for heading in ("# Capacity planner", "## Throughput per CPU core", "## Plans", "## Before / after", "## Commands"):
        assert f"\n{heading}" in f"\n{page}"
    assert page.endswith("\n") and "the enwiki sample (" in page and "`hades-ray plan --input" in page
