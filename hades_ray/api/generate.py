"""``hades_ray.guarded_generate``: ``hades-ray generate --guard`` for a causal LM the caller loaded.

The settings become the ``guard`` section's keys (checked as the command's flags are), the job is the
one the command builds (``guard.runner.guard_job``), and the prompts go through the command's stage
and shard writer in memory (``guard.in_process``), so the same model, prompts, settings and seed give
the command's generations.
"""

from __future__ import annotations

import copy

SAMPLING_KEYS = ("temperature", "top_k", "top_p", "no_end", "batch_size", "slots", "words", "shard_size")


def guarded_generate(
    model,
    tokenizer,
    prompts,
    detector=None,
    threshold=None,
    max_retries=3,
    max_new_tokens=None,
    seed=0,
    language=None,
    config=None,
    **sampling,
):
    """Generate a continuation of each prompt with ``model`` (a causal LM in eval mode) and
    ``tokenizer``, resampling every word the online ``detector`` flags, up to ``max_retries`` times per
    word, as ``hades-ray generate --guard`` does. ``detector``: a ``hades_ray.Detector``, a detector
    folder, the URL of a ``hades-ray serve`` detector, or None (no guard: plain sampling). None for
    ``threshold`` or ``max_new_tokens`` keeps the command's default (the detector's threshold; 60
    tokens); ``sampling``: ``temperature``, ``top_k``, ``top_p``, ``no_end``, ``batch_size``, ``slots``,
    ``words`` (the ``guard`` keys); ``config``: a ``HadesConfig`` to start from.

    Returns, per prompt (one prompt: one record), the line ``generations.jsonl`` holds for it:
    ``{"id": "prompt:N", "prompt", "generation", "text", "new_tokens", "words": [{"word", "start",
    "end", "p", "flag"}], "token_ids", "interventions", "emitted_flagged", "threshold", "batch", "row"}``,
    and ``events``: its lines of ``interventions.jsonl`` (each word taken back, its p(H) and what
    replaced it). A prompt the command would quarantine is a ``ValueError`` naming its place."""
    from hades_ray.config import load_config, set_dotted, validate
    from hades_ray.guard.in_process import generate_records
    from hades_ray.guard.runner import guard_job
    from hades_ray.guard.sampling import prepare_tokenizer

    unknown = sorted(set(sampling) - set(SAMPLING_KEYS))
    if unknown:
        raise TypeError(f"guarded_generate: unknown setting {unknown[0]!r} (known: {', '.join(SAMPLING_KEYS)})")
    if getattr(model, "training", False):
        raise ValueError("the model is in training mode (dropout on): call model.eval() first")
    single = isinstance(prompts, str)
    prompts = [prompts] if single else list(prompts)
    config = copy.deepcopy(config) if config is not None else load_config()
    settings = {"threshold": threshold, "max_retries": max_retries, "max_new_tokens": max_new_tokens, **sampling}
    for name, value in settings.items():
        if value is not None:
            set_dotted(config, f"guard.{name}={value!r}" if isinstance(value, str) else f"guard.{name}={value}")
    set_dotted(config, f"seed={int(seed)}")
    validate(config)
    guard = _guard_reference(detector)
    generator = str(getattr(model, "name_or_path", "") or type(model).__name__)
    config, job, served = guard_job(config, generator, guard, language)
    judge = served or _judge(detector, job, model)
    records = generate_records(model, prepare_tokenizer(copy.deepcopy(tokenizer)), prompts, job, judge, config)
    return records[0] if single else records


def _guard_reference(detector) -> str | None:
    from hades_ray.api.detector import Detector

    if detector is None or isinstance(detector, str):
        return detector or None
    if isinstance(detector, Detector):
        return str(detector.folder)
    raise ValueError(
        f"detector: a hades_ray.Detector, a detector folder or a serve URL (got {type(detector).__name__})"
    )


def _judge(detector, job, model):
    """The judge of ``job``'s guard: a probe on ``model`` reads its states; otherwise the ``Detector``'s own
    loaded model, or the folder's, on the generator's device (None: the guard is off)."""
    from hades_ray.api.detector import Detector
    from hades_ray.guard.judge import open_judge, scorer_judge
    from hades_ray.guard.probe_judge import probe_guard_judge

    if job.detector is None:
        return None
    if isinstance(detector, Detector):
        probe = probe_guard_judge(detector.detector, model, job.threshold, job.words, lang=job.language)
        return probe or scorer_judge(detector.online_scorer(job.stride), job.threshold, job.words, lang=job.language)
    device = str(next(model.parameters()).device)
    return open_judge(job.detector, job.threshold, job.words, device, job.stride, lang=job.language, generator=model)
