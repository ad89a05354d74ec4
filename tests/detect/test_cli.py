"""``hades-ray train | evaluate | predict`` end to end on tiny data (one Ray Train fit, one LR run)."""

from __future__ import annotations

import json

import pytest

from hades_ray.cli import main
from hades_ray.detect.synthetic import toy_instances
from hades_ray.io.hades_format import write_instances

pytestmark = pytest.mark.ray

TINY = [
    "--set",
    "detect.backbone=local:mlm",
    "--set",
    "detect.epochs=1",
    "--set",
    "detect.window=32",
    "--set",
    "detect.batch_size=16",
    "--set",
    "detect.feature_window=32",
]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("detect_cli")
    train = write_instances(toy_instances(24, seed=1), root / "train.jsonl")
    valid = write_instances(toy_instances(8, seed=2), root / "valid.jsonl")
    test = root / "test.jsonl"
    lines = [json.dumps(i.to_json()) for i in toy_instances(6, seed=3)]
    lines.insert(2, '{"replaced": "a ===b=== c", "replaced_ids": [0, 0], "hallucination": 1}')
    unlabelled = {**toy_instances(1, seed=4)[0].to_json(), "hallucination": -1}
    test.write_text("\n".join(lines + [json.dumps(unlabelled)]) + "\n")
    return root, train, valid, test


def test_transformer_train_evaluate_predict(data, micro_home, ray_local, capsys):
    root, train, valid, test = data
    model = root / "transformer"
    assert main(["train", "--train", str(train), "--valid", str(valid), "--output", str(model), *TINY]) == 0
    assert json.loads((model / "metrics.json").read_text())["epoch"] == 0
    assert "| transformer (offline) |" in (model / "metrics.md").read_text()
    # a bad line fails naming file:line, or is quarantined with --skip-bad
    assert main(["evaluate", "--model", str(model), "--data", str(test)]) == 2
    assert "test.jsonl:3" in capsys.readouterr().err
    # evaluate in this process (14 s of actor pools less); predict below keeps the Ray executor
    assert main(["evaluate", "--model", str(model), "--data", str(test), "--skip-bad", "--executor", "local"]) == 0
    metrics = json.loads((model / "eval" / "test" / "metrics.json").read_text())
    assert metrics["n"] == 6 and metrics["quarantined"] == 1
    out = root / "pred" / "test.pred.jsonl"
    assert main(["predict", "--model", str(model), "--data", str(test), "--output", str(out), "--skip-bad"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 7 and rows[0]["id"] == "toy-0"  # input order and fields kept, unlabelled scored too
    assert all(0 <= r["p_hallucination"] <= 1 and r["pred"] in (0, 1) for r in rows)
    assert (root / "pred" / "quarantine.jsonl").is_file()
    _threshold_is_the_validation_choice(model, valid)


def _threshold_is_the_validation_choice(model, valid):
    """Training stored the threshold that maximises G-Mean on the validation set, and score flags at it."""
    from hades_ray.detect.detector import Detector
    from hades_ray.detect.threshold import choose_threshold
    from hades_ray.io.hades_format import read_instances

    instances = read_instances(valid)
    p, _ = Detector.open(model).score_records([i.to_json() for i in instances])
    expected = choose_threshold([i.label for i in instances], p)
    assert Detector.open(model).threshold == expected["threshold"] and 0 < expected["threshold"] <= 1
    out = model.parent / f"{model.name}-score"
    text = "the river flows north through the valley past three old mills"
    assert main(["score", "--model", str(model), "--text", text, "--words", "all", "--output", str(out)]) == 0
    record = json.loads((out / "scores.jsonl").read_text())
    assert record["threshold"] == expected["threshold"] and len(record["words"]) == 11
    assert all(w["flag"] == (w["p"] >= expected["threshold"]) for w in record["words"])


def test_lr_train_evaluate(data, micro_home, ray_local):
    from hades_ray.detect.detector import Detector
    from hades_ray.detect.score_job import evaluate_file

    root, train, valid, _ = data
    model = root / "lr"
    args = ["train", "--detector", "lr", "--train", str(train), "--valid", str(valid), "--output", str(model)]
    assert main(args + TINY) == 0
    assert json.loads((model / "linear.json").read_text())["iterations"] <= 100
    metrics = evaluate_file(Detector.open(model), valid)
    p, _ = Detector.open(model).score_records([i.to_json() for i in toy_instances(8, seed=2)])
    assert metrics["n"] == 8 and p.shape == (8,)
    assert main(args + ["--mode", "online"] + TINY) == 2  # feature detectors are offline only
    _threshold_is_the_validation_choice(model, valid)
