"""REPLACE's other measures (``perturb.baselines``) on micro-model rows: each runs over the same masks."""

from __future__ import annotations

import json
import math

from hades_ray.config import load_config
from hades_ray.perturb import baselines
from hades_ray.perturb.steps import kept_rows
from hades_ray.text.pipeline import load_pipeline
from tests.perturb.test_kept_rows import LEAD


def test_the_stage_its_replay_and_the_batch_1_loop_fill_the_same_rows(micro_home, tmp_path):
    from hades_ray.models.registry import load_masked_lm, resolve_model

    config = load_config("local", overrides=["perturb.rank.num_candidates=2"])
    source = tmp_path / "leads.jsonl"
    source.write_text("".join(json.dumps({"id": f"d{k}", "text": LEAD}) + "\n" for k in range(2)))
    tokenizer, model = load_masked_lm("local:mlm", "cpu")
    rows = kept_rows(str(source), 2, load_pipeline(config.language, config.spacy_model), tokenizer, config)
    before = [dict(r) for r in rows]
    wall, forward, calls = baselines.recorded_batches(rows, config, model, tokenizer)
    assert 0 < forward <= wall and calls and all("input_ids" in c for c in calls)
    assert not isinstance(model.base_model, baselines.Recorder) and rows == before  # rows copied, not filled
    assert baselines.model_only(model, calls) > 0
    assert baselines.run_batches(rows, config, model, tokenizer, padded=True)[0] > 0
    assert baselines.naive_loop(rows, model, tokenizer, config) > 0
    seconds, status = baselines.nlpaug_loop(rows, resolve_model("local:mlm"), config)
    assert status == "ok" and seconds > 0 or math.isnan(seconds) and status.startswith("nlpaug")
