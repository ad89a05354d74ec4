"""The span-representation store (hades_ray/detect/reps.py): made once per view and data, reused by every
fit, named by a digest that changes with the view or the data, resumable; a head trained on it is an
ordinary detector folder whose live p(H) matches the store path's within ``TOLERANCE``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from hades_ray.config import load_config
from hades_ray.detect.synthetic import toy_instances
from hades_ray.io.hades_format import write_instances
from hades_ray.pipeline.executor import Executor

# Store path (stored vectors -> head) against the live path (backbone -> pooled -> head) of the same
# folder: the vectors are pooled by the same code from the same forwards (equal-length groups with filler
# rows, hades_ray/detect/stable.py), so the two differ by float32 rounding at most.
TOLERANCE = 1e-5

OVERRIDES = ["detect.backbone=local:mlm", "detect.epochs=2", "detect.batch_size=8", "detect.lr=0.01",
             "detect.window=32"]  # fmt: skip


def _config(*extra: str):
    return load_config(overrides=[*OVERRIDES, *extra])


def _settings(config) -> dict:
    from hades_ray.train.transformer import detector_settings

    return detector_settings(config, "offline")


class CountingForwards:
    """Counts the store stage's calls in this process (the in-process executor runs the stages here)."""

    def __init__(self, monkeypatch):
        from hades_ray.detect import reps

        self.rows = 0
        original = reps.SpanRepStage.process

        def counted(stage, batch):
            self.rows += batch.num_rows
            return original(stage, batch)

        monkeypatch.setattr(reps.SpanRepStage, "process", counted)


def test_a_store_is_made_once_and_read_by_the_next_fit_without_a_forward(tmp_path, micro_home, monkeypatch):
    from hades_ray.detect.reps import instance_vectors

    # Two-word spans: max and mean pooling differ.
    instances = [dataclasses.replace(i, end=i.end + 1) for i in toy_instances(24, seed=1)]
    path = write_instances(instances, tmp_path / "train.txt")
    config = _config()
    counter = CountingForwards(monkeypatch)
    first, store = instance_vectors(instances, path, _settings(config), config.detect, Executor(kind="local"))
    assert counter.rows == 24 and store.made_now == 1
    # Another head (pooling, depth, lr) needs the same view: the same store, no forward.
    other = _config("detect.pooling=mean", "detect.mlp_layers=3", "detect.lr=0.002")
    again, same = instance_vectors(instances, path, _settings(other), other.detect, Executor(kind="local"))
    assert counter.rows == 24 and same.folder == store.folder and same.made_now == 0 and same.reused == 1
    assert first.shape == again.shape == (24, 32) and not np.allclose(first, again)  # max vs mean pooling
    # A subset (a fold) is looked up in that store by key: no store of its own, no forward.
    subset = instances[::3]
    sub_path = write_instances(subset, tmp_path / "fold.txt")
    part, source = instance_vectors(subset, sub_path, _settings(config), config.detect, Executor(kind="local"),
                                    sources=(store.folder,))  # fmt: skip
    assert counter.rows == 24 and source.made_now == 0 and not (tmp_path / "_reps" / "fold.txt").exists()
    np.testing.assert_array_equal(part, first[::3])


def test_the_store_name_changes_with_the_view_and_the_data_never_with_the_time(tmp_path, micro_home):
    from hades_ray.detect.reps import View, file_store_folder

    instances = toy_instances(10, seed=2)
    path = write_instances(instances, tmp_path / "train.txt")
    view = View.of(_settings(_config()))
    named = file_store_folder(path, view)
    assert Path(named).parent == tmp_path / "_reps"
    assert file_store_folder(path, View.of(_settings(_config("detect.window=48")))) != named
    assert file_store_folder(path, View.of(_settings(_config("detect.window_unit=words")))) != named
    assert file_store_folder(path, View.of(_settings(_config("detect.backbone=local:minilm")))) != named
    assert file_store_folder(path, View.of({**_settings(_config()), "mode": "online"})) != named
    assert file_store_folder(path, View.of(_settings(_config("detect.pooling=mean")))) == named  # both stored
    write_instances(instances, path)  # the same lines again: the same data
    assert file_store_folder(path, view) == named
    write_instances(instances[:-1], path)  # other data: another store, never a stale one
    assert file_store_folder(path, view) != named


def test_the_store_job_resumes_where_it_stopped(tmp_path, micro_home, monkeypatch):
    from hades_ray.detect import file_shards
    from hades_ray.detect.reps import View, file_store
    from hades_ray.pipeline.shards import marker_path

    monkeypatch.setattr(file_shards, "SHARD_ROWS", 8)  # three shards of 8 instances
    path = write_instances(toy_instances(24, seed=3), tmp_path / "train.txt")
    config = _config()
    view = View.of(_settings(config))
    first = file_store(path, view, config.detect, Executor(kind="local"))
    assert first.made_now == 3
    Path(marker_path(first.folder, 1)).unlink()  # as if the run had stopped before shard 1's marker
    counter = CountingForwards(monkeypatch)
    resumed = file_store(path, view, config.detect, Executor(kind="local"))
    assert (resumed.made_now, resumed.reused, counter.rows) == (1, 2, 8)


@pytest.mark.ray
def test_a_head_trained_on_the_store_scores_like_the_live_backbone(tmp_path, micro_home, ray_local):
    from hades_ray.detect.detector import Detector
    from hades_ray.detect.reps import head_scores, instance_vectors
    from hades_ray.detect.score_job import predict_file
    from hades_ray.train.fit import train_detector

    train = write_instances(toy_instances(32, seed=1), tmp_path / "train.txt")
    valid_instances = toy_instances(12, seed=2)
    valid = write_instances(valid_instances, tmp_path / "valid.txt")
    config = _config()
    out = train_detector(config, train, valid, tmp_path / "model")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["span_reps"]["train"]["shards_made_now"] == 1
    detector = Detector.open(out)
    assert set(detector.meta) >= {"backbone", "freeze", "pooling"} and detector.meta["freeze"] == "all"
    # The store path: the head on stored vectors.
    reps, _ = instance_vectors(valid_instances, valid, _settings(config), config.detect, Executor(kind="local"))
    stored = head_scores(detector.load_head(), reps)
    # The live path of the same folder, no store: the backbone runs.
    live, _ = detector.score_instances(valid_instances, _config("detect.reuse_frozen=false").detect)
    np.testing.assert_allclose(stored, live, atol=TOLERANCE, rtol=0)
    # What `hades-ray score` and the service load: the same folder, scoring each span in its own view.
    items = [{"words": i.words, "start": i.start, "end": i.end} for i in valid_instances]
    np.testing.assert_allclose(detector.scorer().score_spans(items), stored, atol=TOLERANCE, rtol=0)
    # predict reads the file's store (made above) and gives the same p(H).
    predicted = predict_file(detector, valid, tmp_path / "pred.jsonl", config, Executor(kind="local"))
    p = [json.loads(line)["p_hallucination"] for line in predicted.read_text().splitlines()]
    np.testing.assert_allclose(p, live, atol=TOLERANCE, rtol=0)
    # Another head's fit reads the same stores (the first test: no shard made again, no forward).
    assert summary["span_reps"]["train"]["store"] == instance_vectors(
        toy_instances(32, seed=1), train, _settings(_config("detect.mlp_hidden=16")), config.detect,
        Executor(kind="local"))[1].folder  # fmt: skip


@pytest.mark.ray
@pytest.mark.slow  # a Ray Train fit of the backbone (30-40 s on 2 cores); test_cli's transformer fit runs one too
def test_reuse_frozen_false_runs_the_backbone_as_before(tmp_path, micro_home, ray_local):
    from hades_ray.train.fit import train_detector

    train = write_instances(toy_instances(16, seed=4), tmp_path / "train.txt")
    valid = write_instances(toy_instances(8, seed=5), tmp_path / "valid.txt")
    out = train_detector(_config("detect.reuse_frozen=false", "detect.epochs=1"), train, valid, tmp_path / "m")
    assert "span_reps" not in json.loads((out / "summary.json").read_text())
    assert not (tmp_path / "_reps").exists()


def test_where_the_backbone_trains_nothing_is_stored_whatever_reuse_frozen_says():
    from hades_ray.detect.reps import reuses_store  # train reads this predicate

    last = _config("detect.freeze=last_layer")
    assert not reuses_store(_settings(last), last.detect) and reuses_store(_settings(_config()), _config().detect)


def test_feature_detectors_read_their_model_features_from_a_store(tmp_path, micro_home, monkeypatch):
    from hades_ray.detect.features import stages
    from hades_ray.detect.features.lexical import LexicalStats
    from hades_ray.detect.features.stages import corpus_features, feature_matrix, stack_features
    from hades_ray.detect.reps import stored_features
    from hades_ray.train.fit import linear_settings

    instances = toy_instances(12, seed=6)
    path = write_instances(instances, tmp_path / "train.txt")
    config = load_config(overrides=["models.mlm=local:mlm"])
    settings = linear_settings(config, "lr")
    counted = {"rows": 0}
    original = stages.MlmFeatureStage.process

    def process(stage, batch):
        counted["rows"] += batch.num_rows
        return original(stage, batch)

    monkeypatch.setattr(stages.MlmFeatureStage, "process", process)
    table = stored_features(instances, [path], settings, config, executor=Executor(kind="local"))
    assert counted["rows"] == 12
    again = stored_features(instances, [path], linear_settings(config, "svm"), config, executor=Executor(kind="local"))
    assert counted["rows"] == 12 and again.equals(table)  # LR and SVM read one store: no MLM forward
    lexical = LexicalStats.fit([i.words for i in instances], 100, 5)
    live = feature_matrix(instances, lexical, settings, config.detect)
    np.testing.assert_array_equal(stack_features(table, corpus_features(lexical, table)), live)
    off = load_config(overrides=["models.mlm=local:mlm", "detect.reuse_frozen=false"])
    assert stored_features(instances, [path], settings, off, executor=Executor(kind="local")) is None
