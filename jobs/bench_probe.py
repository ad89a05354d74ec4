"""The probe beside the span classifier on one test split (evaluate's metrics) and in generate (seconds per
token against plain generation): ``python jobs/bench_probe.py PROBE SPAN TEST.jsonl [TOKENS]``, JSON out."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray import Detector  # noqa: E402
from hades_ray.guard.probe_bench import compare_quality, generation_cost  # noqa: E402
from hades_ray.models.registry import resolve_model  # noqa: E402

if __name__ == "__main__":
    from transformers import AutoModelForCausalLM, AutoTokenizer

    probe_dir, span_dir, test, tokens = *sys.argv[1:4], int((sys.argv[4:] or [32])[0])
    probe, span = Detector.open(probe_dir), Detector.open(span_dir)
    name = resolve_model(probe.detector.backbone)
    tokenizer, model = AutoTokenizer.from_pretrained(name), AutoModelForCausalLM.from_pretrained(name).eval()
    prompts = ["The city of", "In 1990 the band", "Marie Curie was born in"]
    watchers = {"probe": lambda: probe.probe(model, tokenizer, stop=False),
                "span_classifier": lambda: span.stopping_criteria(tokenizer, threshold=1.0)}  # fmt: skip
    quality = compare_quality({"probe": probe_dir, "span_classifier": span_dir}, test)
    cost = generation_cost(model, tokenizer, prompts, watchers, new_tokens=tokens)
    print(json.dumps({"quality": quality, "generate": cost}, indent=2))
