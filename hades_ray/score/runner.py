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
from pathlib import Path

import pyarrow as pa

from hades_ray.config import RESOLVED_NAME, HadesConfig, resolved_yaml
from hades_ray.detect.detector import Detector
from hades_ray.pipeline import storage
from hades_ray.pipeline.executor import log_progress, run_shards
from hades_ray.pipeline.lock import OutputLock
from hades_ray.pipeline.shards import Shard, read_markers
from hades_ray.score.inputs import memory_table, plan_inputs, read_texts
from hades_ray.score.settings import ScoreConfig
from hades_ray.score.stages import score_stages
from hades_ray.score.writer import merge_outputs, write_score_shards

log = logging.getLogger(__name__)
HTML_TEXTS = 200  # texts shown in report.html (the most suspicious words are taken over all of them)


def settings_digest(model: str, settings: ScoreConfig, threshold: float) -> str:
    """The detector (folder and its files' times) and every setting a shard's output depends on."""
    folder = Path(model).resolve()
    stamps = sorted((p.name, p.stat().st_mtime_ns) for p in folder.iterdir() if p.is_file())
    key = [str(folder), stamps, settings.mode, settings.words, threshold, settings.max_chars, settings.stride]
    return hashlib.sha256(json.dumps(key).encode()).hexdigest()


def _memory_texts(text: str | None) -> list[str | bytes]:
    """``--text`` as given, or stdin's non-blank lines as bytes (a line that is not UTF-8 is quarantined)."""
    import sys

    if text is not None:
        return [text]
    return [line.rstrip(b"\r") for line in sys.stdin.buffer.read().splitlines() if line.strip()]


def _read_memory(table: pa.Table, fingerprint: str, shard: Shard) -> pa.Table:
    return table.append_column("fingerprint", pa.array([fingerprint] * table.num_rows, pa.string()))


def _read_file(max_chars: int, digest: str, shard: Shard) -> pa.Table:
    table = read_texts(shard, max_chars)
    return table.append_column("fingerprint", pa.array([shard.fingerprint(digest)] * table.num_rows, pa.string()))


def run_score(
    config: HadesConfig, model: str, output: str, input: str | None = None, text: str | None = None, executor="auto"
) -> dict:
    """Score ``text``, or the texts of ``input`` (a file, folder or URI; "-" for stdin lines), with the
    detector folder ``model`` into ``output`` under the ``score`` section; returns the summary.
    ``executor`` auto: in-process for one text and stdin, Ray Data for files."""
    started = time.perf_counter()
    settings = config.score
    detector = Detector.open(model)  # a missing or broken detector fails here, before any worker starts
    mode = detector.scoring_mode(settings.mode)
    threshold = settings.threshold if settings.threshold is not None else detector.threshold
    digest = settings_digest(model, settings, threshold)
    in_memory = text is not None or input == "-"
    executor = ("local" if in_memory else "ray") if executor == "auto" else executor
    output = str(output)
    with OutputLock(output):
        if in_memory:
            table = memory_table(_memory_texts(text), "stdin" if text is None else "text", settings.max_chars)
            shards = [Shard(0, "memory", "memory", 0, table.num_rows)]
            read = functools.partial(_read_memory, table, shards[0].fingerprint(digest))
            todo = shards
        else:
            mapper = _mapper(config) if executor == "ray" else None
            shards = plan_inputs(input, settings.shard_size, mapper)
            markers = read_markers(output)
            todo = [s for s in shards if markers.get(s.index, {}).get("fingerprint") != s.fingerprint(digest)]
            read = functools.partial(_read_file, settings.max_chars, digest)
        storage.write_text(storage.join(output, RESOLVED_NAME), resolved_yaml(config))
        log.info("%d shards planned: %d to score, %d already finished", len(shards), len(todo), len(shards) - len(todo))
        _run(todo, read, model, output, config, executor, threshold)
        summary = merge_outputs(output, [s.index for s in shards])
        summary = {
            "detector": str(model),
            "mode": mode,
            "words": settings.words,
            "threshold": threshold,
            "threshold_from": "--threshold" if settings.threshold is not None else "detector",
            "executor": executor,
            **summary,
            "shards": {"total": len(shards), "processed_now": len(todo)},
            "wall_seconds": round(time.perf_counter() - started, 3),
        }
        storage.write_text(storage.join(output, "summary.json"), json.dumps(summary, indent=2) + "\n")
        if settings.html:
            write_html(output, threshold, summary.get("scored_texts", 0))
        return summary


def _run(todo, read, model: str, output: str, config: HadesConfig, executor: str, threshold: float) -> None:
    s = config.score
    stages = score_stages(model, s.mode, s.words, config, s.num_gpus, s.stride)
    write = functools.partial(write_score_shards, output=output, threshold=threshold)
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
