"""The generation job's driver: plans shards over the prompts file, refuses stale or concurrent runs,
streams the shards through the generation stage (Ray Data actor pool, or in-process), and merges the
workers' markers and part files into ``generations.jsonl``, ``interventions.jsonl``,
``quarantine.jsonl``, ``summary.json`` and, on request, ``report.html``.
"""

from __future__ import annotations

import functools
import itertools
import hashlib
import json
import logging
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa

from hades_ray.config import RESOLVED_NAME, HadesConfig, resolved_yaml
from hades_ray.errors import UserError
from hades_ray.guard.prompts import PROMPT_SCHEMA, plan_prompt_shards, read_prompt_shard
from hades_ray.guard.stages import GenerateJob, GenerateStage
from hades_ray.guard.writer import EMPTY_SHARD_ROW, write_generation_shards
from hades_ray.pipeline import storage
from hades_ray.pipeline.executor import log_progress, run_shards
from hades_ray.pipeline.lock import OutputLock
from hades_ray.pipeline.shards import Shard, part_name, read_markers
from hades_ray.pipeline.stage import Resources
from hades_ray.ray_runtime import task_mapper

log = logging.getLogger(__name__)
VIEWS = ("generations", "interventions", "quarantine")
TOTALS = ("read", "generated", "quarantined", "new_tokens", "interventions", "judged_words", "flagged_words")
TOTALS += ("emitted_flagged",)
HTML_SHOWN = 200  # generations drawn in full on the page; the rest count in its header


def job_digest(job: GenerateJob, batch_size: int) -> str:
    """What the text depends on: the job, and the batch size (a batch shares one seed)."""
    text = json.dumps({"job": job.to_dict(), "batch_size": batch_size}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def read_with_fingerprint(digest: str, shard: Shard) -> pa.Table:
    """The shard's rows with its fingerprint (a placeholder row when it has none, so its marker is written)."""
    table = read_prompt_shard(shard)
    if table.num_rows == 0:
        placeholder = {"shard": shard.index, "row": EMPTY_SHARD_ROW, "id": "", "prompt": "", "source": ""}
        table = pa.Table.from_pylist([placeholder | {"reject": "empty_shard", "shard_rows": 0}], schema=PROMPT_SCHEMA)
    return table.append_column("fingerprint", pa.array([shard.fingerprint(digest)] * table.num_rows, pa.string()))


def run_generate(
    job: GenerateJob, prompts: str, output: str, config: HadesConfig, executor: str = "ray", force: bool = False
) -> dict:
    """Generate for every prompt of ``prompts`` into ``output`` (actors, shards and report from the
    ``guard`` section); returns the summary."""
    from hades_ray.models.registry import resolve_model
    from hades_ray.pipeline.shards import plan_work

    g = config.guard
    resources = Resources.of_detect(config.detect, g.num_gpus, g.batch_size, max_actors=g.actors)
    started = time.perf_counter()
    output, digest = str(output), job_digest(job, resources.batch_size)
    resolve_model(job.generator)  # a missing model is a user error here, not an actor failing on a worker
    with OutputLock(output):
        mapper = task_mapper(config.ray.address) if executor == "ray" else None
        shards = plan_prompt_shards(str(prompts), g.shard_size, mapper)
        todo, skipped = plan_work(shards, read_markers(output), digest, force)
        settings = {"job": job.to_dict(), "resources": resources.__dict__, "prompts": str(prompts)}
        storage.write_text(storage.join(output, "settings.resolved.json"), json.dumps(settings, indent=2))
        storage.write_text(storage.join(output, RESOLVED_NAME), resolved_yaml(config))
        log.info("%d shards planned: %d to run, %d already finished", len(shards), len(todo), skipped)
        stages = [GenerateStage(resources, job)]
        read = functools.partial(read_with_fingerprint, digest)
        write = functools.partial(write_generation_shards, output=output, config_digest=digest, threshold=job.threshold)
        log_progress(run_shards(executor, todo, read, stages, write), len(todo), "written")
        summary = write_summary(output, job, len(todo), skipped, time.perf_counter() - started)
        if g.html:
            summary["report"] = write_html(output, job, summary["generated"])
        return summary


def write_summary(output: str, job: GenerateJob, processed: int, skipped: int, seconds: float) -> dict:
    """Merge the finished shards' markers into ``summary.json`` and their parts into the JSONL views."""
    markers = read_markers(output)
    for view in VIEWS:
        parts = [storage.join(output, view, f"{part_name(i)}.jsonl") for i in sorted(markers)]
        storage.concatenate(parts, storage.join(output, f"{view}.jsonl"))
    counts: Counter = Counter()
    busy = 0.0
    for marker in markers.values():
        counts.update(marker["counts"])
        busy += marker.get("generate_seconds", 0.0)
    summary = {k: counts[k] for k in TOTALS}
    summary["quarantined_by_reason"] = {k: v for k, v in sorted(counts.items()) if k not in TOTALS}
    summary["guard"] = {"detector": job.detector, "threshold": job.threshold, "max_retries": job.max_retries}
    summary["guard"]["words"] = job.words
    summary["shards"] = {"total": len(markers), "processed_now": processed, "skipped_finished": skipped}
    summary["timings"] = {"wall_seconds": round(seconds, 3), "generate_busy_seconds": round(busy, 3)}
    summary["timings"]["new_tokens_per_busy_second"] = round(counts["new_tokens"] / busy, 2) if busy else None
    storage.write_text(storage.join(output, "summary.json"), json.dumps(summary, indent=2))
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
    suspicious = most_suspicious(report_record(r, {}) for r in storage.iter_jsonl(generations))
    title = f"hades-ray generate: guard {'on' if job.detector else 'off'}, threshold {job.threshold}"
    records = [report_record(r, interventions) for r in shown]
    return str(write_report(records, Path(output) / "report.html", title, suspicious, generated))


def report_record(record: dict, interventions: dict[str, list]) -> dict:
    """The report shows the prompt apart, so the shaded text is the generation (offsets moved onto it)."""
    shift = len(record["prompt"])
    words = [w | {"start": w["start"] - shift, "end": w["end"] - shift} for w in record["words"] if w["start"] >= shift]
    return {
        "id": record["id"],
        "prompt": record["prompt"],
        "text": record["generation"],
        "words": words,
        "threshold": record["threshold"],
        "interventions": interventions.get(record["id"], []),
    }
