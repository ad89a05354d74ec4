"""The tables' grids hold the rows of the paper's Tables 2 and 3, no more: no offline GPT-2 row."""

import pytest

from hades_ray.config import load_config
from hades_ray.report import paper_figures
from hades_ray.reproduce.grid import read_grid


@pytest.mark.parametrize("preset", ["paper", "local"])
def test_each_mode_of_the_grid_has_the_rows_of_its_paper_table(preset):
    cells = read_grid(load_config(preset=preset)).cells(["offline", "online"])
    for mode, (_, rows) in paper_figures.TABLES.items():
        assert sorted(c.row for c in cells if c.mode == mode) == sorted(rows)
    assert ("GPT-2", "offline") not in {(c.row, c.mode) for c in cells}
