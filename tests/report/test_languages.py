"""``hades-ray report`` on a pool of another language: the examples' text carries its ``lang``, and an
Arabic pool's examples are laid out right to left, still escaped; an English pool's page is as before."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hades_ray.cli import main as cli_main
from hades_ray.pool.schemas import POOL_SCHEMA
from tests.report.test_report import EVIL, _document, make_pool

ARABIC = "القاهرة هي عاصمة مصر، وأكبر مدنها."


def _arabic_pool(folder):
    """A pool of one Arabic document whose third word replaced the original's, and its resolved config."""
    row = _document(1, np.random.default_rng(0))
    start = ARABIC.index("مصر")
    span = {**row["spans"][0], "start": start, "end": start + 3, "original": "تونس", "replacement": "مصر"}
    row |= {"perturbed": ARABIC, "title": EVIL, "spans": [span]}
    (folder / "pool").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([row], schema=POOL_SCHEMA), folder / "pool" / "part-00000.parquet")
    (folder / "summary.json").write_text('{"read": 1, "kept": 1, "too_short": 0, "quarantined": 0}')
    (folder / "config.resolved.yaml").write_text("language: ar\nspacy_model: blank\n")
    return folder


def _examples(page: str) -> list[str]:
    return re.findall(r'<div class="example"([^>]*)>', page)


def test_arabic_examples_are_right_to_left_and_escaped(tmp_path):
    pool = _arabic_pool(tmp_path / "pool")
    assert cli_main(["report", "--pool", str(pool), "--output", str(tmp_path / "out")]) == 0
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert _examples(page) == [' dir="rtl" lang="ar"']
    assert '<mark title="was: تونس">مصر</mark>' in page and "القاهرة هي عاصمة" in page
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_english_examples_carry_no_direction(tmp_path):
    pool = make_pool(tmp_path / "pool", docs=3)
    assert cli_main(["report", "--pool", str(pool), "--output", str(tmp_path / "out")]) == 0
    assert _examples((tmp_path / "out" / "report.html").read_text()) == ["", "", ""]
