"""REPLACE (the perturbation job's MLM work) eight ways side by side in one run, in candidates per second:
the stage (exact packing, binned, padded), its forwards alone, a batch-1 fill-mask loop, nlpaug and 1 vs 2
Ray actors (hades_ray/perturb/baselines.py says each), on the enwiki leads with the local preset's MLM.
Fewer candidates than the job's 20 keep it near 10 minutes on 2 cores (smaller batches: the pipeline's lead
over the batch-1 baselines is understated). Writes jobs/results/bench_perturb.{json,md}.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.markdown import pipe_table
from hades_ray.perturb.baselines import model_only, naive_loop, nlpaug_loop, ray_actors, recorded_batches, run_batches
from hades_ray.pipeline.laps import Laps
from jobs.bench_common import ENWIKI, machine_facts, machine_words, options, page, write_results

VARIANTS = ("pipeline", "pipeline_binned", "padded_mixed_lengths", "model_only", "naive_loop", "nlpaug")
VARIANTS += ("ray_1_actor", "ray_2_actors")


FLAGS = {
    "--docs": (200, "demo leads prepared for every in-process variant"),
    "--candidates": (4, "per text (the job's default is 20)"),
    "--naive-docs": (10, "leads of the batch-1 loop and nlpaug variants"),
    "--ray-docs": (60, "documents for the 1 vs 2 actor runs"),
    "--skip-ray": (False, "skip the 1 vs 2 actor runs"),
    "--binned-tokens": (2048, "the binned variant's token budget (it pads every forward to it: the GPU's 32,768 would "
                              "time dummies)"),
}  # fmt: skip


def main() -> int:
    args = options(__doc__, FLAGS)
    if not ENWIKI.is_file():
        print(f"skipped: {ENWIKI} is absent")
        return 0
    from hades_ray.config import load_config
    from hades_ray.models.registry import load_masked_lm, resolve_model
    from hades_ray.perturb.steps import kept_rows
    from hades_ray.text.pipeline import load_pipeline

    machine = machine_facts()  # before the runs: the load they start under
    overrides = [f"perturb.rank.num_candidates={args.candidates}", "perturb.resources.replace.torch_threads=1"]
    config = load_config("local", overrides=overrides)
    torch.set_num_threads(1)
    # every in-process variant uses the preset's dtype, as the stage's actors do (nlpaug loads its own)
    tokenizer, model = load_masked_lm(config.models.mlm, "cpu", config.perturb.replace.dtype)
    laps = Laps()
    rows = kept_rows(str(ENWIKI), args.docs, load_pipeline(config.language, config.spacy_model), tokenizer, config)
    prepare_s = laps.lap()
    candidates = sum(len(r["chosen"]) for r in rows)
    masked = sum(len(c) for r in rows for c in r["chosen"])

    pipe_s, forward_s, calls = recorded_batches(rows, config, model, tokenizer)
    print(f"pipeline: {len(rows)} docs, {candidates} candidates, {masked} spans in {pipe_s:.1f}s", flush=True)
    seconds = {"pipeline": pipe_s, "model_only": model_only(model, calls)}
    binned_keys = ["perturb.replace.packing=binned", f"perturb.replace.max_batch_tokens={args.binned_tokens}"]
    binned = load_config("local", overrides=[*overrides, *binned_keys])
    seconds["pipeline_binned"] = run_batches(rows, binned, model, tokenizer)[0]
    print(f"binned packing: {seconds['pipeline_binned']:.1f}s", flush=True)
    seconds["padded_mixed_lengths"] = run_batches(rows, config, model, tokenizer, padded=True)[0]
    print(f"padded mixed-length batches: {seconds['padded_mixed_lengths']:.1f}s", flush=True)

    subset, ray_rows = rows[: args.naive_docs], rows[: args.ray_docs]
    seconds["naive_loop"] = naive_loop(subset, model, tokenizer, config)
    seconds["nlpaug"], nlpaug_status = nlpaug_loop(subset, resolve_model(config.models.mlm), config)
    print(f"naive {seconds['naive_loop']:.1f}s, nlpaug {nlpaug_status} {seconds['nlpaug']:.1f}s", flush=True)
    nan = float("nan")
    (seconds["ray_1_actor"], steady_1), (seconds["ray_2_actors"], steady_2) = (
        ((nan, nan), (nan, nan)) if args.skip_ray else (ray_actors(ray_rows, config, n) for n in (1, 2))
    )
    counted = {"naive_loop": subset, "nlpaug": subset, "ray_1_actor": ray_rows, "ray_2_actors": ray_rows}
    r = {n: sum(len(x["chosen"]) for x in counted.get(n, rows)) / seconds[n] if seconds[n] else nan for n in VARIANTS}
    known = lambda value: None if math.isnan(value) else value  # noqa: E731
    results = {"docs": len(rows), "binned_tokens": args.binned_tokens, "candidates_per_doc": args.candidates}
    results |= {"candidates": candidates, "masked_spans": masked, "prepare_seconds": prepare_s}
    results |= {"rates_candidates_per_s": r, "ray_docs": len(ray_rows)}
    results["ray_steady_state_ratio_2_vs_1"] = known(steady_1 / steady_2) if steady_2 else None
    results["forward_share_of_pipeline_wall"] = forward_s / pipe_s
    results["model_only_share_of_pipeline_wall"] = seconds["model_only"] / pipe_s
    results |= {"nlpaug_status": nlpaug_status, "machine": machine, "mlm": resolve_model(config.models.mlm)}
    results["ratios"] = {
        "pipeline_vs_naive": r["pipeline"] / r["naive_loop"],
        "pipeline_vs_nlpaug": known(r["pipeline"] / r["nlpaug"]),
        "ray_2_vs_1_actors": None if args.skip_ray else r["ray_2_actors"] / r["ray_1_actor"],
    }
    write_results("bench_perturb", results, markdown(results))
    return 0


def markdown(results: dict) -> str:
    r, q = results["rates_candidates_per_s"], results["ratios"]
    fmt = lambda value: "n/a" if value is None or math.isnan(value) else f"{value:.2f}"  # noqa: E731
    rows = [[name, fmt(r[name]), fmt(r[name] / r["pipeline"] if r[name] == r[name] else None)] for name in VARIANTS]
    return page(
        "# REPLACE benchmark (candidates per second, higher is better)",
        f"{results['docs']} leads x {results['candidates_per_doc']} candidates, {results['masked_spans']} masked "
        f"spans; MLM `{results['mlm']}`; machine: {machine_words(results)}",
        pipe_table(["variant", "candidates/s", "vs pipeline"], rows),
        [
            f"- pipeline / naive loop: **{fmt(q['pipeline_vs_naive'])}x** (aim >= 5x)",
            f"- pipeline_binned: perturb.replace.packing=binned at max_batch_tokens={results.get('binned_tokens')}",
            f"- cost of byte-identical output (exact packing, no padding) against padded mixed-length "
            f"batches: {fmt(r['pipeline'] / r['padded_mixed_lengths'])}x the padded rate",
            f"- pipeline / nlpaug: {fmt(q['pipeline_vs_nlpaug'])}x ({results['nlpaug_status']})",
            f"- share of pipeline wall time inside model forwards: **{results['forward_share_of_pipeline_wall']:.1%}** "
            f"(replayed model-only: {results['model_only_share_of_pipeline_wall']:.1%}; aim >= 85%)",
            f"- 2 actors / 1 actor ({results['ray_docs']} leads, wall time with actor start-up): "
            f"**{fmt(q['ray_2_vs_1_actors'])}x**; steady state (first to last row): "
            f"{fmt(results['ray_steady_state_ratio_2_vs_1'])}x (aim >= 1.8x)",
        ],
    )


if __name__ == "__main__":
    sys.exit(main())
