"""Two rounds end to end on a small synthetic pool (round 1 on Ray): the real detector (one Ray Train fit
on MiniLM), simulated judges, the dataset build and the CLI's guards; then round 2's detector trained
out of fold."""

import json

import pandas as pd
import pytest

from hades_ray.config import load_config
from hades_ray.pipeline.executor import Executor
from tests.select.fake_pool import build_pool
from tests.select.test_crossval import check_out_of_fold_round

SETTINGS = ["select.round_sizes=[50,30]", "select.min_train_instances=10", "detect.epochs=1", "detect.window=32"]
SETTINGS += ["detect.batch_size=16"]
KEEPS = ["keep_threshold", "keep_paraphrase", "keep_swap", "keep_rebalance"]


def batch_ids_of(workdir, k: int) -> set[str]:
    return {json.loads(x)["id"] for x in (workdir / f"round-{k:03d}" / "batch.jsonl").read_text().splitlines()}


@pytest.mark.ray
def test_two_rounds_end_to_end(ray_local, tmp_path):
    from hades_ray.annotate.dataset import build_dataset
    from hades_ray.pool.labels import round_labels
    from hades_ray.annotate.simulate import simulate_judgments
    from hades_ray.select.round import run_round

    workdir = tmp_path / "wd"
    build_pool(workdir / "pool", n_docs=10)
    config = load_config(overrides=SETTINGS)
    # Round 0 in-process (its Ray path and the same batch: tests/select/test_pool.py); round 1 on Ray.
    first = run_round(config, workdir, 0, executor=Executor("local"))
    assert first["counts"]["batch"] == 50 and "rates" not in first
    for _ in range(2):
        simulate_judgments(config, workdir, 0)
    _labeled, report = round_labels(config, workdir, 0)
    assert report["judged"] == 50 and 0 <= report["share_agreement_80"] <= 1
    assert all(
        name.endswith(".simulated.csv")
        for name in [
            p.name for p in (workdir / "round-000" / "judgments").glob("import-*.csv") if ".source" not in p.name
        ]
    )
    second = run_round(config, workdir, 1)
    counts = second["counts"]
    assert counts["unjudged"] == 120 - 50 and counts["scored"] == counts["unjudged"]
    assert counts["after_thresholds"] >= counts["after_paraphrase"] >= counts["after_swaps"] >= counts["batch"]
    assert {"alpha", "beta", "gamma"} <= set(second["rates"]) and "R" in second["ratio"]
    # alpha, beta, gamma come from judged items that neither trained the detector nor picked its epoch.
    data = workdir / "round-001" / "detector" / "data"
    parts = {p: {json.loads(x)["id"] for x in (data / f"{p}.txt").read_text().splitlines()} for p in
             ("train", "heldout", "calibration")}  # fmt: skip
    assert not (parts["train"] & parts["calibration"]) and not (parts["heldout"] & parts["calibration"])
    rates = second["rates"]
    assert rates["tp"] + rates["fn"] + rates["tn"] + rates["fp"] == counts["calibration"] == len(parts["calibration"])
    assert rates["source"] == "calibration split"
    candidates = pd.read_parquet(workdir / "round-001" / "candidates")
    assert len(candidates) == counts["unjudged"] and {"p_hallucination", "keep_rebalance"} <= set(candidates)
    in_batch = candidates[candidates["sample_key"] <= second["batch_sample_key_max"]]
    assert set(in_batch.loc[in_batch[KEEPS].all(axis=1), "id"]) == batch_ids_of(workdir, 1)
    saved = json.loads((workdir / "round-001" / "round.json").read_text())
    assert saved["counts"] == counts
    batch_ids = {json.loads(x)["id"] for x in (workdir / "round-001" / "batch.jsonl").read_text().splitlines()}
    first_ids = {json.loads(x)["id"] for x in (workdir / "round-000" / "batch.jsonl").read_text().splitlines()}
    assert not batch_ids & first_ids
    assert run_round(config, workdir, 1) == saved  # a selected round is returned as recorded, not redone
    with pytest.raises(FileExistsError, match="--force"):
        run_round(load_config(overrides=[*SETTINGS, "seed=3"]), workdir, 1)  # other settings stop it
    simulate_judgments(config, workdir, 1)
    with pytest.raises(FileExistsError, match="rounds are never overwritten"):
        run_round(config, workdir, 1, executor=Executor("local", force=True))  # judged: never redone
    stats = build_dataset(config, workdir, tmp_path / "dataset")
    assert stats["instances"] > 0 and set(stats["splits"]) == {"train", "valid", "test"}
    docs = {}
    for split in ("train", "valid", "test"):
        for line in (tmp_path / "dataset" / f"{split}.txt").read_text().splitlines():
            docs.setdefault(json.loads(line)["doc_id"], set()).add(split)
    assert all(len(s) == 1 for s in docs.values())  # no document crosses splits
    check_out_of_fold_round(config, workdir)  # round 2's detector trained the paper's way (crossval)
