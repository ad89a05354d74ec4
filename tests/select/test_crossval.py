"""The round detector of the paper preset (our reading of "using the accumulated data": README
deviations): on every accumulated judgment, with alpha, beta and gamma from out-of-fold predictions of
the last round's judgments (two folds + the final fit, run on the judged rounds of
tests/select/test_round.py)."""

import json

import numpy as np
import pytest

from hades_ray.pipeline.shards import StaleShardError
from hades_ray.select.crossval import assign_folds, rated_mask


def test_folds_are_stratified_and_seeded():
    labels = np.array([1] * 30 + [0] * 13)
    fold = assign_folds(labels, 5, seed=3)
    assert sorted(np.bincount(fold)) == [8, 8, 9, 9, 9]  # sizes differ by one at most
    assert all(abs((fold[labels == 1] == f).sum() - 6) <= 1 for f in range(5))
    assert (assign_folds(labels, 5, seed=3) == fold).all() and (assign_folds(labels, 5, seed=4) != fold).any()


def test_rates_come_from_the_last_round_unless_told_all_rounds():
    records = [{"round": r} for r in (0, 0, 1, 2, 2)]
    assert rated_mask(records, 3, "last_round").tolist() == [False, False, False, True, True]
    assert rated_mask(records, 3, "all_rounds").all()


def check_out_of_fold_round(config, workdir) -> None:
    """Round 2's detector as the paper preset trains it (our reading), on a work directory whose rounds 0
    and 1 are judged: on every accumulated judgment, alpha/beta/gamma from out-of-fold predictions of round 1's
    judgments. Called at the end of tests/select/test_round.py's two rounds (one pool and two judged
    rounds serve both tests; CI time is short)."""
    from hades_ray.pool.labels import consensus_items
    from hades_ray.pipeline.steps import run_step
    from hades_ray.select.detector import detector_step
    from hades_ray.select.ratio import detector_rates

    config.select.detector_training, config.select.folds = "crossval", 2
    out = workdir / "round-002"
    summary = run_step(detector_step(config, workdir, 2, consensus_items(config, workdir, [0, 1])))
    assert summary is not None
    judged = {str(r["id"]): r for r in consensus_items(config, workdir, [0, 1])}
    last_round = {i for i, r in judged.items() if r["round"] == 1}
    record = json.loads((out / "detector" / "crossval.json").read_text())
    trained_on = {}
    for fold in record["folds"]:
        train, predicted = set(fold["train_ids"]), set(fold["predicted_ids"])
        assert not train & predicted and train | predicted == set(judged)
        trained_on.update({i: train for i in predicted})
    assert set(trained_on) == set(judged)  # every judged item is predicted once, out of fold
    assert set(record["rated_ids"]) == last_round and 0 < len(last_round) < len(judged)
    assert all(i not in trained_on[i] for i in record["rated_ids"])
    p = dict(zip(record["ids"], record["oof_p"]))
    rated = sorted(last_round)
    expected = detector_rates([judged[i]["hallucination"] for i in rated], [int(p[i] >= 0.5) for i in rated])
    assert {k: summary["rates"][k] for k in expected} == expected
    assert summary["rates"]["source"].startswith("out-of-fold")
    # The round's own detector trains on every accumulated judgment, for the folds' epoch count.
    final = [json.loads(x)["id"] for x in (out / "detector" / "data" / "all.txt").read_text().splitlines()]
    assert set(map(str, final)) == set(judged) and summary["counts"]["train"] == len(judged)
    # The frozen backbone's span vectors of the pool were stored once (round 1 made the store); every fold
    # and the round's detector looked the judged items up there: no store of their own, no forward.
    (store,) = (workdir / "reps").glob("pool-span_reps-*")
    for model in [*(out / "detector" / "folds").glob("fold-*/model"), out / "detector" / "model"]:
        made = json.loads((model / "summary.json").read_text())["span_reps"]
        assert {made[p]["store"] for p in ("train", "valid")} == {str(store)}
        assert made["train"]["shards_made_now"] == 0
    assert summary["detector"]["epochs"] == int(np.ceil(np.median(summary["detector"]["fold_best_epochs"]))) + 1
    judgments = consensus_items(config, workdir, [0, 1])
    assert run_step(detector_step(config, workdir, 2, judgments)) == summary  # the same settings: not retrained
    config.detect.lr = 0.5
    with pytest.raises(StaleShardError, match="round 2's detector .*--force"):
        run_step(detector_step(config, workdir, 2, judgments))  # other settings: never reused
    # The literal reading (select.rates_from=previous_detector): round 1's batch as round 1's own detector,
    # the one that selected it, scored it; round 1 has no previous detector (round 0 samples at random).
    from hades_ray.detect.detector import Detector
    from hades_ray.select.crossval import hades_fields
    from hades_ray.select.detector import previous_detector_rates

    rates = previous_detector_rates(workdir, judgments, 2)
    batch = [r for r in judgments if r["round"] == 1]
    model_dir = json.loads((workdir / "round-001" / "round.json").read_text())["detector"]["model_dir"]
    _, pred = Detector.open(model_dir).score_records([hades_fields(r) for r in batch])
    assert {k: rates[k] for k in ("alpha", "beta", "gamma")} == {
        k: detector_rates([r["hallucination"] for r in batch], pred)[k] for k in ("alpha", "beta", "gamma")
    }
    assert rates["source"] == "round 1's batch scored by round 1's detector"
    assert previous_detector_rates(workdir, judgments, 1) is None
