"""The generation job: shards over the prompts file, the generation stage (one actor holds the
generator and, with the guard on, the online detector), the shard writer, the settings digest and the
summary's layout; ``report.html`` is drawn from the merged views afterwards, on request.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
from pathlib import Path

from hades_ray.config import RESOLVED_NAME, HadesConfig, resolved_yaml
from hades_ray.errors import UserError
from hades_ray.guard.prompts import plan_prompt_shards, read_prompt_shard
from hades_ray.guard.stages import GenerateJob, GenerateStage
from hades_ray.guard.writer import VIEWS, write_shard
from hades_ray.pipeline import storage
from hades_ray.pipeline.executor import Executor
from hades_ray.pipeline.job import ShardJob
from hades_ray.pipeline.stage import Resources
from hades_ray.text.languages import Language

TOTALS = ("read", "generated", "quarantined", "new_tokens", "interventions", "judged_words", "flagged_words")
TOTALS += ("emitted_flagged",)
HTML_SHOWN = 200  # generations drawn in full on the page; the rest count in its header


def guard_job(
    config: HadesConfig, generator: str | None, guard: str | None, language: str | None = None, prompts=None
) -> tuple[HadesConfig, GenerateJob, object]:
    """What ``generate`` (and ``hades_ray.guarded_generate``) runs: the config resolved for the text's
    language (``--language``, else the detector's or the service's), and the job with the ``guard``
    section's settings, the threshold the section or the detector gives, and ``guard`` (a detector
    folder, a served detector's URL, or None: the guard off). Also the served detector's ``HttpJudge``
    when ``guard`` is a URL (None otherwise): asked once here, so an unreachable service fails first."""
    from hades_ray.config import resolve_language
    from hades_ray.detect.detector import Detector
    from hades_ray.guard.http_judge import HttpJudge, is_url
    from hades_ray.guard.sampling import Sampling
    from hades_ray.score.runner import detector_language, text_language
    from hades_ray.text.languages import DEFAULT_LANGUAGE

    threshold, detector, served = config.guard.threshold, guard, None
    name = text_language(config, DEFAULT_LANGUAGE, prompts, language)  # the guard off: no detector's language
    if is_url(guard):  # an unreachable or offline service fails here, before any work
        served = HttpJudge(guard, threshold)
        threshold, name = served.threshold, served.language.name
    elif guard:
        found = Detector.open(guard)
        found.require_online()  # a folder that is no online span classifier fails before any work
        threshold = found.threshold if threshold is None else threshold
        detector = str(Path(guard).resolve())
        name = text_language(config, detector_language(found), prompts, language)
    config = resolve_language(dataclasses.replace(config, language=name), prompts)
    g = config.guard  # with the language's overrides
    job = GenerateJob(
        generator=generator or config.models.causal_lm,
        sampling=Sampling(g.max_new_tokens, g.temperature, g.top_k, g.top_p, g.no_end),
        seed=config.seed,
        detector=detector,
        threshold=threshold,
        max_retries=g.max_retries,
        slots=g.slots,
        words=g.words,
        dtype=g.dtype,
        stride=config.score.stride,
        language=config.lang,
    )
    return config, job, served


def generation_resources(config: HadesConfig) -> Resources:
    """One generation actor's resources; its ``batch_size`` is the guard's (a batch shares one seed)."""
    g = config.guard
    return Resources(**config.detect.actor_resources(g.num_gpus, g.batch_size, max_actors=g.actors))


def job_digest(job: GenerateJob, batch_size: int) -> str:
    """What the text depends on: the job, the batch size (a batch shares one seed) and the judge: a detector
    folder by its identity, so generations kept from a detector retrained in the same folder are stale."""
    from hades_ray.detect.detector import Detector
    from hades_ray.guard.http_judge import is_url

    judge = Detector.open(job.detector).identity() if job.detector and not is_url(job.detector) else job.detector
    text = json.dumps({"job": job.to_dict(), "batch_size": batch_size, "judge": judge}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def generate_job(job: GenerateJob, prompts: str, output: str, config: HadesConfig) -> ShardJob:
    """Generation for every prompt of ``prompts`` into ``output`` (actors and shards from the ``guard``
    section)."""
    g = config.guard
    resources = generation_resources(config)
    settings = {"job": job.to_dict(), "resources": resources.__dict__, "prompts": prompts}
    return ShardJob(
        name="generate",
        output=output,
        digest=job_digest(job, resources.batch_size),
        plan=functools.partial(plan_prompt_shards, prompts, g.shard_size),
        read=read_prompt_shard,
        stages=lambda: [GenerateStage(resources, job)],
        write=functools.partial(write_shard, output=output, threshold=job.threshold),
        summarize=functools.partial(summarize, job),
        views=VIEWS,
        resolved={"settings.resolved.json": json.dumps(settings, indent=2), RESOLVED_NAME: resolved_yaml(config)},
        rows_verb="prompts",
    )


def run_generate(
    job: GenerateJob, prompts: str, output: str, config: HadesConfig, executor: Executor | None = None
) -> dict:
    """Generate for every prompt of ``prompts`` into ``output`` (on Ray per the config unless ``executor``
    says otherwise); returns the summary (with ``report``, the page's path, when the section asks for one)."""
    from hades_ray.models.registry import resolve_model

    resolve_model(job.generator)  # a missing model is a user error here, not an actor failing on a worker
    executor = executor or Executor.of(config.ray)
    summary = executor.run(generate_job(job, str(prompts), str(output), config))
    if config.guard.html:
        summary["report"] = write_html(str(output), job, summary["generated"])
    return summary


def summarize(job: GenerateJob, merged: dict) -> dict:
    """``summary.json``'s fields from the shards' merged counts (the executor adds shards and timings)."""
    counts = merged.get("counts", {})
    summary = {k: counts.get(k, 0) for k in TOTALS}
    summary["quarantined_by_reason"] = {k: v for k, v in sorted(counts.items()) if k not in TOTALS}
    summary["guard"] = {"detector": job.detector, "threshold": job.threshold, "max_retries": job.max_retries}
    summary["guard"]["words"] = job.words
    busy = merged.get("stage_seconds", {}).get(GenerateStage.name, 0.0)
    rate = round(summary["new_tokens"] / busy, 2) if busy else None
    summary["timings"] = {"new_tokens_per_busy_second": rate}  # the executor adds wall and busy seconds
    return summary


def write_html(output: str, job: GenerateJob, generated: int) -> str:
    """``report.html``: each prompt, then its generation shaded by the guard's p(H), and its interventions
    (the first ``HTML_SHOWN`` in full; the most suspicious words are drawn from all)."""
    from hades_ray.score.html import most_suspicious, write_report

    if not storage.is_local(output):
        raise UserError(f"--html writes a local file; {output} is not a local folder")
    generations = storage.join(output, "generations.jsonl")
    shown = list(itertools.islice(storage.iter_jsonl(generations), HTML_SHOWN))
    ids = {record["id"] for record in shown}
    interventions: dict[str, list] = {}  # only the shown generations' (the file streams past the rest)
    for event in storage.iter_jsonl(storage.join(output, "interventions.jsonl")):
        if event["id"] in ids:
            interventions.setdefault(event["id"], []).append(event)
    language = job.language
    suspicious = most_suspicious(report_record(r, {}, language) for r in storage.iter_jsonl(generations))
    title = f"hades-ray generate: guard {'on' if job.detector else 'off'}, threshold {job.threshold}"
    records = [report_record(r, interventions, language) for r in shown]
    return str(write_report(records, Path(output) / "report.html", title, suspicious, generated))


def report_record(record: dict, interventions: dict[str, list], language: Language) -> dict:
    """The report shows the prompt apart, so the shaded text is the generation (offsets moved onto it);
    ``language`` lays it out (``score/html.py``: right to left for Arabic, Persian, Hebrew)."""
    shift = len(record["prompt"])
    words = [w | {"start": w["start"] - shift, "end": w["end"] - shift} for w in record["words"] if w["start"] >= shift]
    return language.record_fields() | {
        "id": record["id"],
        "prompt": record["prompt"],
        "text": record["generation"],
        "words": words,
        "threshold": record["threshold"],
        "interventions": interventions.get(record["id"], []),
    }
