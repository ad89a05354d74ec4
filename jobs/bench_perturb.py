"""Benchmark of REPLACE (the MLM work of the perturbation job), side by side in one run.

On leads of ../shared/data/enwiki2015_first_paragraphs.jsonl with the local preset's masked LM:
  * pipeline      - this project's REPLACE stage (exact token-budget packing: sequences of one length
                    share each forward; hades_ray/perturb/packing.py)
  * binned        - the same stage with perturb.replace.packing=binned (fixed shapes: the GPU's mode)
  * padded        - the same batches as one padded fill over mixed lengths (the job before it grouped lengths)
  * model-only    - the very same forwards replayed with no pipeline around them
  * naive loop    - Hugging Face fill-mask style: one full forward per masked token per candidate, batch 1
  * nlpaug        - ContextualWordEmbsAug on the same MLM folder, substituting as many words per candidate
  * 1 vs 2 actors - the REPLACE stage as a Ray Data actor pool, 1 thread per actor
Every variant fills the same masks (prepared once); rates are candidates per second, the slow baselines'
on a subset of the documents. Fewer candidates than the job's 20 keep the run near 10 minutes on 2 cores;
the pipeline's batches are then smaller, so its advantage over the batch-1 baselines is understated.
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.markdown import pipe_table
from hades_ray.pipeline.laps import Laps
from jobs.bench_common import ENWIKI, machine_facts, machine_words, options, page, write_results

VARIANTS = ("pipeline", "pipeline_binned", "padded_mixed_lengths", "model_only", "naive_loop", "nlpaug")
VARIANTS += ("ray_1_actor", "ray_2_actors")


def _prepared_rows(config, docs: int) -> list[dict]:
    from transformers import AutoTokenizer

    from hades_ray.models.registry import resolve_model
    from hades_ray.perturb.steps import kept_rows
    from hades_ray.text.pipeline import load_pipeline

    tokenizer = AutoTokenizer.from_pretrained(resolve_model(config.models.mlm))
    return kept_rows(str(ENWIKI), docs, load_pipeline(config.language, config.spacy_model), tokenizer, config)


def run_batches(rows, config, model, tokenizer, padded: bool = False) -> tuple[float, float]:
    """(wall seconds, seconds inside forwards) of the REPLACE stage over ``rows`` in its batches; ``padded``:
    the same batches filled the way the job did before it grouped equal lengths, every candidate of a batch
    in one padded fill (faster on a CPU, but padding makes bf16 results batch-dependent)."""
    from hades_ray.perturb.replace import fill_masks, vocabulary_bans
    from hades_ray.perturb.steps import masked_sequences, replace_rows

    bans = vocabulary_bans(tokenizer, model.config.vocab_size)
    size, timings, rows = config.perturb.resources.replace.batch_size, {"forward": 0.0}, [dict(r) for r in rows]
    laps = Laps()
    for batch in (rows[begin : begin + size] for begin in range(0, len(rows), size)):
        if not padded:
            replace_rows(batch, model, tokenizer, bans, config, timings)
            continue
        sequences = sorted(
            (s for r in batch for s in masked_sequences(r, tokenizer.mask_token_id, 0)), key=lambda s: len(s.input_ids)
        )
        fill_masks(model, sequences, config.perturb.replace, bans, tokenizer.pad_token_id)
    return laps.lap(), timings["forward"]


class Recorder(torch.nn.Module):
    """Wraps the encoder to keep every forward's inputs for the model-only replay."""

    def __init__(self, base):
        super().__init__()
        self.base, self.calls = base, []

    def forward(self, **kwargs):
        self.calls.append({k: v.clone() for k, v in kwargs.items()})
        return self.base(**kwargs)


def model_only(model, calls) -> float:
    """The recorded encoder inputs replayed, the head at one position per row as the stage does."""
    head, laps = (model.cls if hasattr(model, "cls") else model.lm_head), Laps()
    with torch.inference_mode():
        for call in calls:
            rows = call["input_ids"].shape[0]
            head(model.base_model(**call)[0][torch.arange(rows), torch.zeros(rows, dtype=torch.long)])
    return laps.lap()


def naive_loop(rows, model, tokenizer, config) -> float:
    """One full-vocabulary forward per masked token per candidate, batch size 1 (fill-mask style)."""
    from hades_ray.perturb.steps import masked_sequences

    laps, k = Laps(), config.perturb.replace.top_k
    with torch.inference_mode():
        for seq in (s for row in rows for s in masked_sequences(row, tokenizer.mask_token_id, config.seed)):
            ids = torch.tensor([seq.input_ids])
            for position, original in zip(seq.positions, seq.original_ids):
                logits = model(input_ids=ids).logits[0, position]
                logits[original] = float("-inf")
                values, indices = logits.topk(k)
                ids[0, position] = indices[int(seq.rng.choice(k, p=values.double().softmax(-1).numpy()))]
    return laps.lap()


def nlpaug_loop(rows, mlm_dir: str, config) -> tuple[float, str]:
    """nlpaug's ContextualWordEmbsAug substituting as many words per candidate as our masks hold. nlpaug
    1.1.11 calls slow-tokenizer internals that transformers 5 removed: they are mapped onto the public
    conversions (same ids) so the baseline runs at all."""
    try:
        import nlpaug.augmenter.word as naw
        from transformers import AutoTokenizer
    except ImportError as error:  # the bench extra is not installed
        return float("nan"), f"nlpaug unavailable: {error}"
    cls = type(AutoTokenizer.from_pretrained(mlm_dir))
    if not hasattr(cls, "_convert_token_to_id"):
        cls._convert_token_to_id = lambda self, token: self.convert_tokens_to_ids(token)
        cls._convert_id_to_token = lambda self, index: self.convert_ids_to_tokens(index)
    try:
        settings = {"model_type": "bert", "action": "substitute", "device": "cpu", "batch_size": 1}
        aug = naw.ContextualWordEmbsAug(model_path=mlm_dir, top_k=config.perturb.replace.top_k, **settings)
        laps = Laps()
        for row in rows:
            for chosen in row["chosen"]:
                aug.aug_min = aug.aug_max = len(chosen)
                aug.augment(row["text"])
        return laps.lap(), "ok"
    except Exception as error:  # report, don't hide, a baseline that breaks on current transformers
        return float("nan"), f"nlpaug failed: {type(error).__name__}: {error}"


def ray_actors(rows, config, actors: int) -> tuple[float, float]:
    """The REPLACE stage alone as a Ray Data actor pool of ``actors`` x 1 thread: (wall seconds,
    steady-state seconds from the first finished row to the last, i.e. without actor start-up)."""
    import ray

    from hades_ray.perturb.stages import ReplaceStage
    from hades_ray.pipeline.stage import Resources, StageActor
    from hades_ray.ray_runtime import init_ray

    init_ray(num_cpus=os.cpu_count())
    res = config.perturb.resources.replace
    items = [{k: r[k] for k in ("doc_id", "status", "input_ids", "units", "chosen")} for r in rows]
    ds = ray.data.from_items(items, override_num_blocks=max(1, len(items) // res.batch_size))
    ds = ds.map_batches(
        StageActor,
        fn_constructor_args=(ReplaceStage(config, Resources(num_cpus=0.5, batch_size=res.batch_size)),),
        batch_size=res.batch_size,
        batch_format="pyarrow",
        compute=ray.data.ActorPoolStrategy(size=actors),
        num_cpus=0.5,
    )
    started = time.perf_counter()
    stamps = [time.perf_counter() for _ in ds.iter_rows()]
    assert len(stamps) == len(items)
    return stamps[-1] - started, stamps[-1] - stamps[0]


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

    machine = machine_facts()  # before the runs: the load they start under
    overrides = [f"perturb.rank.num_candidates={args.candidates}", "perturb.resources.replace.torch_threads=1"]
    config = load_config("local", overrides=overrides)
    torch.set_num_threads(1)
    # every in-process variant uses the preset's dtype, as the stage's actors do (nlpaug loads its own)
    tokenizer, model = load_masked_lm(config.models.mlm, "cpu", config.perturb.replace.dtype)
    laps = Laps()
    rows = _prepared_rows(config, args.docs)
    prepare_s = laps.lap()
    candidates = sum(len(r["chosen"]) for r in rows)
    masked = sum(len(c) for r in rows for c in r["chosen"])

    recorder = Recorder(model.base_model)
    setattr(model, model.base_model_prefix, recorder)
    pipe_s, forward_s = run_batches(rows, config, model, tokenizer)
    setattr(model, model.base_model_prefix, recorder.base)
    print(f"pipeline: {len(rows)} docs, {candidates} candidates, {masked} spans in {pipe_s:.1f}s", flush=True)
    seconds = {"pipeline": pipe_s, "model_only": model_only(model, recorder.calls)}
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
