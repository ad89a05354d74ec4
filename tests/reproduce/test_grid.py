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


def test_the_epoch_is_picked_on_a_slice_of_train_when_valid_is_the_scored_split(tmp_path):
    from hades_ray.detect.synthetic import toy_instances
    from hades_ray.io.hades_format import read_instances, write_instances
    from hades_ray.reproduce.run import epoch_note
    from hades_ray.reproduce.trial import epoch_split, training_files

    dataset = tmp_path / "dataset"
    write_instances(toy_instances(60, seed=1), dataset / "train.txt")
    local = load_config(preset="local", overrides=["reproduce.test_split=valid"])
    assert epoch_split(local) == "valid" and "lean optimistic" in epoch_note(local)  # said in the tables
    assert training_files(local, dataset, tmp_path / "cell") == (dataset / "train.txt", dataset / "valid.txt")

    paper = load_config(preset="paper", overrides=["reproduce.test_split=valid"])
    assert epoch_split(paper) == "train_slice" and "seeded 10%" in epoch_note(paper)
    assert epoch_split(load_config(preset="paper")) == "valid"  # a labelled test split: valid picks the epoch
    kept, picked = training_files(paper, dataset, tmp_path / "cell")
    train = [i.to_json() for i in read_instances(dataset / "train.txt")]
    parts = [[i.to_json() for i in read_instances(path)] for path in (kept, picked)]
    assert parts[1] and len(parts[0]) + len(parts[1]) == len(train)
    assert sorted(map(str, parts[0] + parts[1])) == sorted(map(str, train))  # a partition, lines unchanged
    again = training_files(paper, dataset, tmp_path / "again")
    assert [p.read_bytes() for p in again] == [kept.read_bytes(), picked.read_bytes()]  # seeded
