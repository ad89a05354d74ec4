"""`hades-ray reproduce tables` end to end on micro models and a tiny HaDes-format dataset: a grid of
two trials (LR, and a micro BERT through Ray Train) as one Tune experiment; one trial fails, the
rerun of the same command runs only that trial, one with other settings is refused naming --force
(there is no --resume); the tables' figures are the
metrics of the trials' own test predictions, beside the paper's; McNemar and the bootstrap on
known inputs."""

from __future__ import annotations

import json
import math

import pytest

from hades_ray.cli import main
from hades_ray.detect.synthetic import toy_instances
from hades_ray.io.hades_format import write_instances
from hades_ray.metrics import binary_metrics

pytestmark = pytest.mark.ray

GRID = """rows:
  - {name: LR, detector: lr, modes: [offline]}
  - {name: BERT, backbone: local:mlm, stands_in_for: bert-large-uncased, modes: [offline, online]}
"""


@pytest.fixture
def dataset(tmp_path):
    folder = tmp_path / "dataset"
    for split, n, seed in (("train", 32, 1), ("valid", 12, 2), ("test", 24, 3)):
        write_instances(toy_instances(n, seed=seed), folder / f"{split}.txt")
    return folder


def _args(tmp_path, dataset, *extra):
    (tmp_path / "grid.yaml").write_text(GRID)
    return ["reproduce", "tables", "--dataset", str(dataset), "--output", str(tmp_path / "out"),
            "--grid", str(tmp_path / "grid.yaml"), "--modes", "[offline]", "--epochs", "1",
            "--set", "detect.window=32", "--set", "detect.feature_window=32", "--set", "detect.batch_size=16",
            "--set", "reproduce.bootstrap_resamples=200", *extra]  # fmt: skip


@pytest.mark.slow  # two Tune runs with a Ray Train trial (45 s on 2 cores); make test keeps the tables' own checks
def test_grid_fails_resumes_and_tables_come_from_predictions(tmp_path, dataset, micro_home, ray_local, capsys,
                                                             monkeypatch):  # fmt: skip
    from hades_ray.reproduce.tables import paper_tables
    from hades_ray.reproduce.trial import FAULT_ENV

    monkeypatch.setenv(FAULT_ENV, f"BERT-offline:{tmp_path / 'fault.marker'}")
    assert main(_args(tmp_path, dataset)) == 1  # BERT's trial raised once: its row is empty
    captured = capsys.readouterr()
    assert "2 trials" in captured.out and "training token-forwards" in captured.out  # the cost, printed first
    assert "BERT-offline" in captured.err and "Rerun the same command" in captured.err
    out = tmp_path / "out"
    lr_file = out / "cells" / "LR-offline" / "predictions.json"
    lr_mtime = lr_file.stat().st_mtime_ns
    first = json.loads((out / "tables.json").read_text())
    assert [r["status"] for r in first["tables"]["offline"]["rows"]] == ["done", "failed or not run"]

    with pytest.raises(SystemExit):  # --force is the one override: no --resume flag
        main(_args(tmp_path, dataset, "--resume"))
    assert "unrecognized arguments: --resume" in capsys.readouterr().err

    monkeypatch.delenv(FAULT_ENV)
    assert main(_args(tmp_path, dataset)) == 0  # the same command again continues the grid
    printed = capsys.readouterr().out
    assert "Table 2 (offline)" in printed and "BERT (stand-in: local:mlm)" in printed
    assert lr_file.stat().st_mtime_ns == lr_mtime  # the finished LR trial was not run again

    data = json.loads((out / "tables.json").read_text())
    assert data["stand_ins"] and data["labels"] == "unknown" and not data["failed"]
    paper = paper_tables().get("offline", {})
    rows = data["tables"]["offline"]["rows"]
    assert [r["row"] for r in rows] == ["LR", "BERT"]
    for row in rows:
        record = json.loads((out / "cells" / f"{row['row']}-offline" / "predictions.json").read_text())
        assert record["ids"] == [f"line-{k}" for k in range(1, 25)] and row["n"] == 24
        ours = binary_metrics(record["labels"], record["pred"], record["p"])
        for key, cell in row["cells"].items():
            assert cell["ours"] == pytest.approx(100 * ours[key]) or (cell["ours"] is None and math.isnan(ours[key]))
            assert cell["paper"] == paper.get(row["row"], {}).get(key)
            if cell["paper"] is not None and cell["ours"] is not None:
                assert cell["diff"] == pytest.approx(cell["ours"] - cell["paper"])
    lr = rows[0]["cells"]
    assert (lr["h_precision"]["paper"], lr["h_recall"]["paper"], lr["h_f1"]["paper"]) == (62.10, 51.24, 60.33)
    assert "which give 56.15" in lr["h_f1"]["note"] and "60.33† /" in (out / "tables.md").read_text()
    (pair,) = data["tables"]["offline"]["paired"]
    assert (pair["a"], pair["b"], pair["n"]) == ("LR", "BERT", 24) and 0 <= pair["mcnemar_exact_p"] <= 1
    assert "Table 2 (offline)" in (out / "tables.md").read_text()
    assert main(_args(tmp_path, dataset, "--set", "detect.linear_tol=0.001")) == 2
    err = capsys.readouterr().err  # finished cells of another config: refused before any trial, never mixed
    assert "trial LR-offline" in err and "other settings" in err and "Traceback" not in err
    assert "--force" in err


def test_mcnemar_and_bootstrap_on_known_inputs():
    from hades_ray.reproduce.tables import _paired

    labels = [1, 0] * 20
    right = {"ids": [str(k) for k in range(40)], "labels": labels, "p": [0.9 if y else 0.1 for y in labels]}
    a = {**right, "pred": labels}  # all 40 right
    b = {**right, "pred": [1 - y if k < 6 else y for k, y in enumerate(labels)]}  # the first 6 wrong
    (result,) = _paired({"A": a, "B": b}, seed=7, resamples=500)
    assert (result["a_right_b_wrong"], result["b_right_a_wrong"]) == (6, 0)
    assert result["mcnemar_exact_p"] == pytest.approx(2 * 0.5**6)  # exact two-sided binomial, 6 of 6
    assert result["gmean_difference"] == pytest.approx(1 - 0.85)  # B: TPR and TNR 17/20 each
    assert result["gmean_ci_low"] <= result["gmean_difference"] <= result["gmean_ci_high"]
    assert _paired({"A": a, "B": b}, seed=7, resamples=500) == [result]  # a fixed seed, the same interval


def test_an_unlabelled_test_split_is_named_before_any_work(tmp_path, dataset, capsys):
    import dataclasses

    unlabelled = [dataclasses.replace(i, label=-1) for i in toy_instances(5, seed=4)]  # as Wiki-Hades' test.txt
    write_instances(unlabelled, dataset / "test.txt")
    assert main(_args(tmp_path, dataset)) == 2
    err = capsys.readouterr().err
    assert "no labelled instances to score" in err and "reproduce.test_split=valid" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()
