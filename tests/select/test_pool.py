"""Selection over the pool as a dataset: only finished shards, features stored once per shard and
resumed, the same batch whatever the layout, the calibration split, and a candidate target after R."""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from hades_ray.config import load_config
from hades_ray.pipeline.executor import Executor
from hades_ray.pipeline.shards import StaleShardError
from hades_ray.pipeline.stage import Resources, Stage
from tests.select.fake_pool import add_empty_shard, build_pool

LOCAL = Executor("local")


def _config(*overrides):
    return load_config(overrides=["select.round_sizes=[20,40]", *overrides])


def _batch_ids(workdir: Path, k: int) -> list[str]:
    lines = (workdir / f"round-{k:03d}" / "batch.jsonl").read_text().splitlines()
    return [json.loads(x)["id"] for x in lines]


def _candidate_ids(workdir: Path, k: int) -> set[str]:
    import pyarrow.parquet as pq

    parts = sorted((workdir / f"round-{k:03d}" / "candidates").glob("part-*.parquet"))
    return {i for p in parts for i in pq.read_table(p, columns=["id"]).column("id").to_pylist()}


def test_reads_only_finished_shards(micro_home, tmp_path):
    from hades_ray.select.round import run_round

    workdir = tmp_path / "wd"
    build_pool(workdir / "pool", n_docs=10, docs_per_shard=4, unfinished=True)
    summary = run_round(_config(), workdir, 0, executor=LOCAL)
    assert summary["counts"]["pool"] == 120 and summary["counts"]["batch"] == 20
    seen = _candidate_ids(workdir, 0)
    assert len(seen) == 120 and not any(i.startswith("d10000") or i == "stray" for i in seen)
    assert sorted(p.name for p in (workdir / "features").glob("part-*.parquet")) == [
        "part-00000.parquet",
        "part-00001.parquet",
        "part-00002.parquet",
    ]


def test_same_seed_same_batch_whatever_the_shard_layout(micro_home, tmp_path):
    from hades_ray.select.round import run_round

    batches = []
    for docs_per_shard, batch in ((2, 7), (5, 1000)):
        workdir = tmp_path / f"wd{docs_per_shard}"
        build_pool(workdir / "pool", n_docs=10, docs_per_shard=docs_per_shard, unfinished=False)
        config = _config(f"select.similarity_batch_size={batch}", f"select.spacy_batch_size={batch}")
        run_round(config, workdir, 0, executor=LOCAL)
        batches.append(sorted(_batch_ids(workdir, 0)))
    assert batches[0] == batches[1] and len(batches[0]) == 20
    other = tmp_path / "other-seed"
    build_pool(other / "pool", n_docs=10, unfinished=False)
    run_round(load_config(overrides=["select.round_sizes=[20]", "seed=7"]), other, 0, executor=LOCAL)
    assert sorted(_batch_ids(other, 0)) != batches[0]


def test_features_resume_per_shard_and_stop_on_other_settings(micro_home, tmp_path):
    from hades_ray.pool.feature_job import compute_features, ensure_features

    workdir = tmp_path / "wd"
    build_pool(workdir / "pool", n_docs=10, docs_per_shard=4, unfinished=False)
    config = _config()
    first = compute_features(config, workdir, executor=LOCAL)
    (workdir / "features" / "_markers" / "part-00001.json").unlink()  # as if its worker had died
    done = ensure_features(config, workdir, LOCAL)
    assert (done["computed"], done["reused"]) == (1, 2)
    assert compute_features(config, workdir, executor=LOCAL).equals(first)
    changed = _config("select.ner_context_words=3")
    with pytest.raises(StaleShardError, match="part-00000, part-00001, part-00002 .*--force"):
        ensure_features(changed, workdir, LOCAL)  # other settings: the engine's one skip policy
    assert ensure_features(changed, workdir, Executor("local", force=True))["computed"] == 3
    subset = compute_features(changed, workdir, ids=["d0-s1", "d9-s0"], executor=LOCAL)
    assert sorted(subset["id"]) == ["d0-s1", "d9-s0"]


def test_calibration_split_is_disjoint_and_stratified():
    from hades_ray.select.detector import split_judged

    labels = np.array([1] * 30 + [0] * 20)
    parts = split_judged(labels, 0.2, 0.2, seed=3)
    assert set(parts) == {"train", "heldout", "calibration"}
    for value, n in ((1, 30), (0, 20)):
        members = parts[labels == value]
        assert (members == "calibration").sum() == round(0.2 * n) and (members == "heldout").sum() == round(0.2 * n)
    tiny = split_judged(np.array([1, 1, 0, 0, 0]), 0.2, 0.2, seed=0)
    assert (tiny[:2] == "train").any() and (tiny[2:] == "train").any()
    assert (split_judged(labels, 0.2, 0.2, seed=3) == parts).all()


class HashDetector(Stage):
    """A stand-in detector stage: p(H) a hash of the id (so the test controls nothing but the filters)."""

    name = "hash_detector"
    inputs = {"id": pa.string()}
    outputs = {"p_hallucination": pa.float64(), "pred": pa.int8()}

    def process(self, batch):
        p = np.array([(zlib.crc32(i.encode()) % 1000) / 1000 for i in batch.column("id").to_pylist()])
        return {"p_hallucination": p, "pred": (p >= 0.5).astype(np.int8)}


RATES = {"alpha": 0.8, "beta": 0.7, "gamma": 80 / 95, "false_omission": 0.2}  # Eq. 1 gives R = 3/13


def _stand_in_scores(monkeypatch):
    from hades_ray.detect.detector import Detector

    monkeypatch.setattr(Detector, "open", classmethod(lambda cls, folder: cls(folder, {"type": "lr"})))
    monkeypatch.setattr(Detector, "stages", lambda self, *a, **k: [HashDetector(Resources(batch_size=16))])


@pytest.fixture
def stand_in_detector(monkeypatch, tmp_path):
    """Round K's detector replaced by fixed rates and the hash stage (no judgments needed)."""
    from hades_ray.pipeline.steps import Step
    from hades_ray.select import round as round_module

    model_dir = tmp_path / "detector"
    model_dir.mkdir()
    (model_dir / "weights").write_text("stand-in")
    trained = {"model_dir": str(model_dir), "counts": {"rated": 10}, "rates": RATES, "detector": {}}

    def step(config, workdir, round_index, labeled, force=False, **_where):
        return Step("stand-in detector", str(tmp_path / f"fit-{round_index}"), "stand-in", lambda: trained)

    monkeypatch.setattr(round_module, "too_few", lambda *args: "")
    monkeypatch.setattr(round_module, "detector_step", step)
    _stand_in_scores(monkeypatch)


def test_candidate_target_accounts_for_r(micro_home, tmp_path, stand_in_detector):
    from hades_ray.select.round import run_round

    workdir = tmp_path / "wd"
    build_pool(workdir / "pool", n_docs=10, unfinished=False)
    config = _config("select.candidate_target=40", "select.paraphrase_threshold=1.0")
    run_round(config, workdir, 0, executor=LOCAL)
    summary = run_round(config, workdir, 1, executor=LOCAL)
    counts = summary["counts"]
    assert abs(summary["ratio"]["R"] - 3 / 13) < 1e-9
    # The band is placed for the target after Eq. 1, so subsampling cannot leave the batch short.
    assert counts["after_rebalance"] >= 40 and counts["batch"] == 40 and counts["after_thresholds"] > 40
    assert counts["predicted_h_after_rebalance"] < counts["predicted_h_before_rebalance"]
    assert counts["scored"] == counts["unjudged"] == 100 and not summary["messages"]


def test_round_says_why_it_cannot_fill_the_batch(micro_home, tmp_path, stand_in_detector):
    from hades_ray.select.round import run_round

    workdir = tmp_path / "wd"
    build_pool(workdir / "pool", n_docs=10, unfinished=False)
    config = load_config(overrides=["select.round_sizes=[20,95]", "select.paraphrase_threshold=1.0"])
    run_round(config, workdir, 0, executor=LOCAL)
    summary = run_round(config, workdir, 1, executor=LOCAL)
    assert summary["counts"]["batch"] == summary["counts"]["after_rebalance"] < 95
    text = " ".join(summary["messages"])
    assert "Eq. 1 subsampling" in text and "fewer than the batch of 95" in text


def _crash(*args, **kwargs):
    raise RuntimeError("the driver died")


def test_a_crashed_round_resumes_and_other_settings_stop_it(
    micro_home, tmp_path, stand_in_detector, monkeypatch, capsys
):
    from hades_ray.cli import main
    from hades_ray.select import round as round_module
    from hades_ray.select.round import run_round

    workdir = tmp_path / "wd"
    build_pool(workdir / "pool", n_docs=10, unfinished=False)
    add_empty_shard(workdir / "pool", 3)  # travels as the engine's placeholder through every pass
    config = _config("select.paraphrase_threshold=1.0")
    run_round(config, workdir, 0, executor=LOCAL)
    save_config = round_module.save_config
    monkeypatch.setattr(round_module, "save_config", _crash)  # after batch.jsonl, before round.json
    with pytest.raises(RuntimeError, match="died"):
        run_round(config, workdir, 1, executor=LOCAL)
    out = workdir / "round-001"
    batch = (out / "batch.jsonl").read_bytes()
    cli = ["round", "--workdir", str(workdir), "--executor", "local", "--set", "select.round_sizes=[20,40]"]
    assert main([*cli, "--round", "1", "--set", "select.paraphrase_threshold=0.5"]) == 2
    assert "rerun with --force" in capsys.readouterr().err  # finished shards of another rule: the engine stops
    markers = {name: out / name / "_markers" for name in ("scores", "candidates")}
    kept = {name: (folder / "part-00000.json").read_text() for name, folder in markers.items()}
    for folder in markers.values():
        (folder / "part-00001.json").unlink()  # as if its worker had died
    monkeypatch.setattr(round_module, "save_config", save_config)
    summary = run_round(config, workdir, 1, executor=LOCAL)
    assert (out / "batch.jsonl").read_bytes() == batch and summary["counts"]["batch"] == 40
    assert summary["features"] == {**summary["features"], "computed": 0, "reused": 4}
    for name, folder in markers.items():  # finished shards skipped, the lost one redone
        assert (folder / "part-00000.json").read_text() == kept[name] and (folder / "part-00001.json").is_file()
    candidates = pd.read_parquet(out / "candidates")  # the folder is a Parquet dataset of parts, nothing else
    assert len(candidates) == summary["counts"]["unjudged"] and (out / "candidates" / "part-00003.parquet").is_file()
    monkeypatch.setattr(round_module, "save_config", _crash)
    with pytest.raises(RuntimeError, match="died"):
        run_round(config, workdir, 2, executor=LOCAL)
    monkeypatch.setattr(round_module, "save_config", save_config)
    assert main([*cli, "--round", "2", "--set", "select.paraphrase_threshold=0.5", "--force"]) == 0
    assert json.loads((workdir / "round-002" / "round.json").read_text())["round"] == 2


@pytest.mark.ray
@pytest.mark.slow  # a round on 2 Ray actors (30-60 s on 2 cores); test_round's rounds run on Ray in make test
def test_ray_matches_in_process_with_more_actors(ray_local, tmp_path):
    from hades_ray.select.round import run_round

    local, on_ray = tmp_path / "local", tmp_path / "ray"
    for workdir in (local, on_ray):
        build_pool(workdir / "pool", n_docs=10, docs_per_shard=3, unfinished=True)
    run_round(_config(), local, 0, executor=LOCAL)
    run_round(
        _config("select.feature_concurrency=2", "select.similarity_num_cpus=0.25"), on_ray, 0, executor=Executor("ray")
    )
    assert _batch_ids(local, 0) == _batch_ids(on_ray, 0)
    assert json.loads((on_ray / "round-000" / "round.json").read_text())["counts"]["pool"] == 120
    shutil.rmtree(local)


def test_paper_rounds_train_a_bert_detector():
    from hades_ray.select.detector import round_detector_config

    paper = load_config("paper")
    assert round_detector_config(paper).detect.backbone == "bert-base-cased"
    assert paper.models.encoder == "roberta-large"  # the paraphrase similarity keeps the paper's encoder
    assert round_detector_config(load_config("local")).detect.backbone == ""  # local: models.encoder


def test_a_changed_detector_setting_stops_the_round_or_retrains(micro_home, tmp_path, monkeypatch):
    """A rerun never reuses a round's detector trained with other settings: it stops, naming the fit,
    and --force retrains it."""
    from hades_ray.annotate.simulate import simulate_judgments
    from hades_ray.select import detector as detector_module
    from hades_ray.select import round as round_module
    from hades_ray.select.round import run_round

    fits = []

    def fit(config, labeled, labels, folder, round_index, *rest):
        fits.append(config.detect.lr)
        model = folder / "model"
        model.mkdir(parents=True, exist_ok=True)
        (model / "weights").write_text(f"fit {len(fits)}")
        detector = {"model_dir": str(model), "lr": config.detect.lr}
        return {"model_dir": model, "counts": {"rated": 10}, "rates": RATES, "detector": detector}

    monkeypatch.setattr(detector_module, "split_detector", fit)
    monkeypatch.setattr(detector_module, "crossval_detector", fit)
    _stand_in_scores(monkeypatch)
    workdir = tmp_path / "wd"
    build_pool(workdir / "pool", n_docs=10, unfinished=False)
    settings = ["select.min_train_instances=2", "select.paraphrase_threshold=1.0"]
    config = _config(*settings)
    run_round(config, workdir, 0, executor=LOCAL)
    for _ in range(2):
        simulate_judgments(config, workdir, 0)
    save_config = round_module.save_config
    monkeypatch.setattr(round_module, "save_config", _crash)  # the detector is trained, the round not selected
    with pytest.raises(RuntimeError, match="died"):
        run_round(config, workdir, 1, executor=LOCAL)
    monkeypatch.setattr(round_module, "save_config", save_config)
    changed = _config(*settings, "detect.lr=0.01")
    with pytest.raises(StaleShardError, match="round 1's detector .*rerun with --force"):
        run_round(changed, workdir, 1, executor=LOCAL)
    assert len(fits) == 1 and fits[0] != 0.01
    summary = run_round(changed, workdir, 1, executor=Executor("local", force=True))
    assert fits[1:] == [0.01] and summary["detector"]["lr"] == 0.01
