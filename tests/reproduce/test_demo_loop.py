"""The demo loop's rounds (hades_ray/reproduce/demo_loop.py): each round is selected, judged by the
simulated panel (then 2 more judges where it disagrees) and its agreement reported; a rerun keeps the
rounds already selected; the simulated cut makes the asked share read as N."""

from __future__ import annotations

import json

import pandas as pd

from hades_ray.config import load_config
from hades_ray.pipeline.executor import Executor
from hades_ray.pipeline.laps import Laps
from hades_ray.reproduce.demo_loop import judged_rounds, simulated_cut


def test_the_cut_lets_the_asked_share_read_as_n():
    similarity = pd.Series([str(x / 10) for x in range(11)])  # a column read back as text still cuts
    assert simulated_cut(similarity, 0.3) == 0.7
    assert (similarity.astype(float) >= simulated_cut(similarity, 0.3)).mean() == 4 / 11


def test_every_round_is_selected_judged_and_its_agreement_said(tmp_path):
    from tests.select.fake_pool import build_pool

    build_pool(tmp_path / "pool", n_docs=10)
    settings = ["select.round_sizes=[30,20]", "select.min_train_instances=1000", "detect.epochs=1"]
    config = load_config(overrides=settings)
    said, shown, laps = [], [], Laps()
    judged_rounds(config, tmp_path, 2, 0.1, laps, said.append, shown.append, executor=Executor("local"))
    assert [s["round"] for s in shown] == [0, 1] and list(laps.laps)[:2] == ["round_0_select", "round_0_judgments"]
    agreement = [line for line in said if "agreement (simulated judges)" in line]
    assert len(agreement) == 2 and json.loads(agreement[0].split(": ", 1)[1])
    assert any("SIMULATED judges:" in line for line in said)
    shown.clear()
    judged_rounds(config, tmp_path, 2, 0.1, Laps(), said.append, shown.append, executor=Executor("local"))
    assert shown == []  # both rounds kept
