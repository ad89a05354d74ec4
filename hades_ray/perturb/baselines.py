"""REPLACE measured other ways, for the benchmark that sets them beside the stage (jobs/bench_perturb.py):
the stage's own batches (exact token-budget packing, hades_ray/perturb/packing.py: sequences of one length
share each forward; or ``packing=binned``, fixed shapes, the GPU's mode; or one padded fill over mixed
lengths, the job before it grouped lengths), the very same forwards replayed with no pipeline around them,
a Hugging Face fill-mask style loop (one full forward per masked token per candidate, batch 1), nlpaug's
ContextualWordEmbsAug on the same MLM folder, and the stage as a Ray Data actor pool of 1 thread per actor.
Every one fills the same prepared masks; the benchmark runs the slow baselines on a subset of the leads."""

from __future__ import annotations

import os
import time

import torch

from hades_ray.pipeline.laps import Laps


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


def recorded_batches(rows, config, model, tokenizer) -> tuple[float, float, list[dict]]:
    """``run_batches`` with the encoder's inputs recorded: its two figures and every forward's inputs."""
    recorder = Recorder(model.base_model)
    setattr(model, model.base_model_prefix, recorder)
    try:
        return (*run_batches(rows, config, model, tokenizer), recorder.calls)
    finally:
        setattr(model, model.base_model_prefix, recorder.base)


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
    """nlpaug's ContextualWordEmbsAug substituting as many words per candidate as our masks hold: (seconds,
    "ok" or why it did not run). nlpaug 1.1.11 calls slow-tokenizer internals that transformers 5 removed:
    they are mapped onto the public conversions (same ids) so the baseline runs at all."""
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
