"""The score job's driver: plans shards of the input, streams them through the target and score
stages (Ray Data for files, in-process for one text or stdin), merges the workers' parts, and writes
``summary.json`` and, if asked, ``report.html``.

A rerun on the same output skips the shards already finished with the same detector and settings
(their marker carries a fingerprint of both), so an interrupted job resumes.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from hades_ray.config import HadesConfig
from hades_ray.detect.api import detector_type
from hades_ray.detect.threshold import detector_threshold
from hades_ray.pipeline import storage
from hades_ray.pipeline.executor import log_progress, run_shards
from hades_ray.pipeline.lock import OutputLock
from hades_ray.pipeline.shards import Shard, read_markers
from hades_ray.score.inputs import MAX_CHARS, memory_table, plan_inputs, read_texts
from hades_ray.score.stages import score_stages
from hades_ray.score.writer import merge_outputs, write_score_shards

log = logging.getLogger(__name__)
HTML_TEXTS = 200  # texts shown in report.html (the most suspicious words are taken over all of them)


@dataclass(frozen=True)
class ScoreRequest:
    """What to score and how (the CLI's flags)."""

    model: str
    output: str
    input: str | None = None  # a file, folder or URI; "-" for stdin lines
    text: str | None = None  # one text given directly
    mode: str | None = None  # online | offline; None: the detector's own
    words: str = "content"
    threshold: float | None = None  # None: the detector's stored threshold
    html: bool = False
    executor: str = "auto"  # auto: in-process for --text and stdin, Ray Data for files
    max_chars: int = MAX_CHARS
    shard_size: int = 256
    num_gpus: float = 0.0  # per scoring actor
    stride: int = 0  # causal online windows: tokens between window starts (0: a quarter window)


def settings_digest(request: ScoreRequest, threshold: float) -> str:
    """The detector (folder and its files' times) and every setting a shard's output depends on."""
    model = Path(request.model).resolve()
    stamps = sorted((p.name, p.stat().st_mtime_ns) for p in model.iterdir() if p.is_file())
    key = [str(model), stamps, request.mode, request.words, threshold, request.max_chars, request.stride]
    return hashlib.sha256(json.dumps(key).encode()).hexdigest()


def _memory_texts(request: ScoreRequest) -> list[str | bytes]:
    """``--text`` as given, or stdin's non-blank lines as bytes (a line that is not UTF-8 is quarantined)."""
    import sys

    if request.text is not None:
        return [request.text]
    return [line.rstrip(b"\r") for line in sys.stdin.buffer.read().splitlines() if line.strip()]


def _read_memory(table: pa.Table, fingerprint: str, shard: Shard) -> pa.Table:
    return table.append_column("fingerprint", pa.array([fingerprint] * table.num_rows, pa.string()))


def _read_file(max_chars: int, digest: str, shard: Shard) -> pa.Table:
    table = read_texts(shard, max_chars)
    return table.append_column("fingerprint", pa.array([shard.fingerprint(digest)] * table.num_rows, pa.string()))


def run_score(request: ScoreRequest, config: HadesConfig) -> dict:
    """Score the request's texts into ``request.output``; returns the summary."""
    started = time.perf_counter()
    meta = detector_type(request.model)  # a missing or broken detector fails here, before any worker starts
    threshold = request.threshold if request.threshold is not None else detector_threshold(request.model)
    digest = settings_digest(request, threshold)
    in_memory = request.text is not None or request.input == "-"
    executor = ("local" if in_memory else "ray") if request.executor == "auto" else request.executor
    output = str(request.output)
    with OutputLock(output):
        if in_memory:
            source = "stdin" if request.text is None else "text"
            table = memory_table(_memory_texts(request), source, request.max_chars)
            shards = [Shard(0, "memory", "memory", 0, table.num_rows)]
            read = functools.partial(_read_memory, table, shards[0].fingerprint(digest))
            todo = shards
        else:
            mapper = _mapper(config) if executor == "ray" else None
            shards = plan_inputs(request.input, request.shard_size, mapper)
            markers = read_markers(output)
            todo = [s for s in shards if markers.get(s.index, {}).get("fingerprint") != s.fingerprint(digest)]
            read = functools.partial(_read_file, request.max_chars, digest)
        log.info("%d shards planned: %d to score, %d already finished", len(shards), len(todo), len(shards) - len(todo))
        _run(todo, read, request, config, executor, threshold)
        summary = merge_outputs(output, [s.index for s in shards])
        summary = {
            "detector": str(request.model),
            "mode": request.mode or meta.get("mode", "offline"),
            "words": request.words,
            "threshold": threshold,
            "threshold_from": "--threshold" if request.threshold is not None else "detector",
            "executor": executor,
            **summary,
            "shards": {"total": len(shards), "processed_now": len(todo)},
            "wall_seconds": round(time.perf_counter() - started, 3),
        }
        storage.write_text(storage.join(output, "summary.json"), json.dumps(summary, indent=2) + "\n")
        if request.html:
            write_html(output, threshold, summary.get("scored_texts", 0))
        return summary


def _run(todo, read, request: ScoreRequest, config, executor: str, threshold: float) -> None:
    stages = score_stages(request.model, request.mode, request.words, config, request.num_gpus, request.stride)
    write = functools.partial(write_score_shards, output=str(request.output), threshold=threshold)
    log_progress(run_shards(executor, todo, read, stages, write, config.ray.check_resources), len(todo), "scored")


def _mapper(config: HadesConfig):
    from hades_ray.ray_runtime import task_mapper

    return task_mapper(config.ray.address, config.ray.num_cpus)


def write_html(output: str, threshold: float, total: int) -> None:
    """``report.html`` from ``scores.jsonl``: the first texts in full, the most suspicious words of all."""
    from hades_ray.score.html import most_suspicious, write_report

    scores = storage.join(output, "scores.jsonl")
    shown = list(itertools.islice(storage.iter_jsonl(scores), HTML_TEXTS))
    suspicious = most_suspicious(storage.iter_jsonl(scores))
    write_report(shown, storage.join(output, "report.html"), "p(H) per word", suspicious, total)
