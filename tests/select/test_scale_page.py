"""Selection at scale's figures (hades_ray/select/scale_page.py) on made-up rounds, and the synthetic pool in
the old, merged layout (hades_ray/pool/synthetic.write_merged_pool)."""

from __future__ import annotations

import json

import pandas as pd

from hades_ray.pool.synthetic import synthetic_shard, write_merged_pool
from hades_ray.select.scale_page import scale_notes, scale_page, scale_ratios


def _round(wall: float, rss: int, scores: float) -> dict:
    return {"wall_s": wall, "driver_peak_rss_mib": rss, "counts": {"batch": 4}, "timings": {"scores_s": scores}}


def test_ratios_notes_and_the_page_from_two_sizes_and_the_old_path():
    new = {str(n): {"round_0": _round(n / 100, 400, 0), "round_1": _round(n / 50, 500, n / 1e4)} for n in (10, 1010)}
    results = {"command": "python jobs/bench_scale_select.py", "new": new}
    results["old"] = {"10": {"round_0": _round(1.0, 410, 0), "round_1": _round(2.0, 520, 0.1)}}
    assert scale_ratios(results)["new round_1 wall, 1,010 / 10"] == 101.0
    results |= {"ratios": scale_ratios(results), "notes": scale_notes(results)}
    assert results["notes"][0].startswith("old round_0 holds 10 MiB more in the driver at 10 instances (~1024.0 KiB")
    assert results["notes"][-1] == "round 1 scores: 100 us per extra pool instance"
    page = scale_page(results, "52952ae").splitlines()
    assert len(page) == 2 + 6 + 1 + 1 + 4 + 3 and page[9].startswith("Reproduce: `python jobs/bench_scale_select.py`")
    assert "| old (52952ae) | 10 | 1 | 2.0 | 520 | 4 | 0.1 | - |" in page


def test_the_merged_pool_holds_the_same_instances_with_the_word_marked(tmp_path):
    write_merged_pool(tmp_path, 25, 10, {"digest": "old"})
    records = [json.loads(line) for line in (tmp_path / "pool" / "instances.jsonl").read_text().splitlines()]
    first, _ = synthetic_shard(0, 10, 10)
    assert len(records) == 25 and records[0]["id"] == first[0]["id"]
    assert records[0]["replaced"].split()[first[0]["start"]] == f"==={first[0]['replacement']}==="
    features = pd.read_parquet(tmp_path / "features" / "features.parquet")
    assert len(features) == 25 and "repl_pos" not in features
    assert json.loads((tmp_path / "features" / "features.json").read_text()) == {"digest": "old"}
