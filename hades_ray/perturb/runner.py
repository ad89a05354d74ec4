"""The perturbation job's driver: shards the input, runs the stages (on Ray Data or in-process),
writes each shard when all of its rows are back, and keeps the summary.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path

from hades_ray.config import HadesConfig, save_config
from hades_ray.io.readers import InputRow, read_rows
from hades_ray.perturb.shards import (
    atomic_write_text,
    finished_shards,
    merge_views,
    read_marker,
    shard_fingerprint,
    write_shard,
)
from hades_ray.perturb.spans import hades_instances
from hades_ray.perturb.stages import DocumentPreparer, MaskFiller, PerplexityRanker

log = logging.getLogger(__name__)
QUARANTINE_KEEPS = ("too_short", "no_maskable_words")  # normal filtering: counted, not quarantined
TIMING_COLUMNS = ("t_prepare", "t_replace", "t_replace_forward", "t_rank")


class StaleShardError(FileExistsError):
    """A finished shard was made from other input or another config."""


def config_digest(config: HadesConfig) -> str:
    relevant = config.to_dict()
    for key in ("ray", "detect", "select", "annotate"):
        relevant.pop(key, None)
    relevant["perturb"].pop("resources", None)  # resources never change the output
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()


def iter_shards(rows: Iterable[InputRow], size: int) -> Iterator[tuple[int, list[InputRow]]]:
    iterator = iter(rows)
    for shard in itertools.count():
        chunk = list(itertools.islice(iterator, size))
        if not chunk:
            return
        yield shard, chunk


def _row_dicts(shard: int, rows: list[InputRow]) -> list[dict]:
    return [
        {
            "shard": shard,
            "row": i,
            "doc_id": r.doc_id,
            "title": r.title,
            "text": r.text,
            "source": r.source,
            "reject": r.reject,
        }
        for i, r in enumerate(rows)
    ]


def run_stages_ray(items: list[dict], config: HadesConfig) -> Iterator[dict]:
    """The three stages as Ray Data actor pools; rows stream back as they finish."""
    import ray

    res = config.perturb.resources
    config_dict = config.to_dict()
    items = sorted(items, key=lambda r: len(r["text"]))  # similar lengths share a batch: less padding
    # One block per CPU-stage batch: each batch's output block is one unit of work for the model
    # stages, so small inputs still spread over every actor.
    blocks = max(1, min(len(items), 10_000, -(-len(items) // res.annotate.batch_size)))
    ds = ray.data.from_items(items, override_num_blocks=blocks)
    for stage, cls in (("annotate", DocumentPreparer), ("replace", MaskFiller), ("rank", PerplexityRanker)):
        r = getattr(res, stage)
        ds = ds.map_batches(
            cls,
            fn_constructor_kwargs={"config": config_dict},
            batch_size=r.batch_size,
            compute=ray.data.ActorPoolStrategy(size=r.concurrency),
            num_cpus=r.num_cpus,
            num_gpus=r.num_gpus or None,
        )
    yield from ds.iter_rows()


def run_stages_in_process(items: list[dict], config: HadesConfig) -> Iterator[dict]:
    """The same stages, serially in this process (debugging, and the benchmark's baseline)."""
    from hades_ray.perturb.stages import _columns, _rows

    config_dict = config.to_dict()
    stages = [DocumentPreparer(config_dict), MaskFiller(config_dict), PerplexityRanker(config_dict)]
    sizes = [
        config.perturb.resources.annotate.batch_size,
        config.perturb.resources.replace.batch_size,
        config.perturb.resources.rank.batch_size,
    ]
    items = sorted(items, key=lambda r: len(r["text"]))
    for begin in range(0, len(items), sizes[1]):
        batch = _columns(items[begin : begin + sizes[1]])
        for stage in stages:
            batch = stage(batch)
        yield from _rows(batch)


def _shard_outputs(shard: int, rows: list[dict], config: HadesConfig) -> tuple[list, list, list, Counter, dict]:
    pool, instances, quarantine, counts = [], [], [], Counter(read=len(rows))
    timings = defaultdict(float)
    for row in sorted(rows, key=lambda r: r["row"]):
        for column in TIMING_COLUMNS:
            timings[column] += float(row.get(column) or 0.0)
        status = row["status"]
        if status != "ok":
            counts[status] += 1
            if status not in QUARANTINE_KEEPS:
                counts["quarantined"] += 1
                quarantine.append(
                    {
                        "doc_id": row["doc_id"],
                        "source": row["source"],
                        "reason": status,
                        "text_head": (row["text"] or "")[:200],
                    }
                )
            continue
        result = json.loads(row["payload"])
        spans = result["spans"]
        pool.append(
            {
                "doc_id": row["doc_id"],
                "title": row["title"],
                "original": row["text"],
                "perturbed": result["perturbed"],
                "ppl": result["ppl"],
                "candidate": result["candidate"],
                "candidate_ppls": result["candidate_ppls"],
                "spans": spans,
                "shard": shard,
                "row": row["row"],
            }
        )
        made = hades_instances(row["doc_id"], result["perturbed"], spans, config.perturb.lowercase_instances)
        instances.extend(made)
        counts["kept"] += 1
        counts["perturbed"] += 1
        counts["instances"] += len(made)
    return pool, instances, quarantine, counts, dict(timings)


def _check_or_skip(output: Path, shard: int, fingerprint: str, force: bool) -> bool:
    """True if the shard is finished and current; raise if it is finished but stale."""
    marker = read_marker(output, shard)
    if marker is None or force:
        return False
    if marker.get("fingerprint") != fingerprint:
        raise StaleShardError(
            f"{output}/markers/part-{shard:05d}.json was made from other input rows or another config; "
            "rerun with --force to redo it, or write to a new --output"
        )
    return True


def run_perturb(
    config: HadesConfig,
    input_path: str | Path,
    output_dir: str | Path,
    limit: int | None = None,
    force: bool = False,
    executor: str = "ray",
    shards_per_wave: int = 64,
) -> dict:
    """Perturb ``input_path`` (a file, a folder, or ``demo``) into ``output_dir``; returns the summary."""
    started = time.perf_counter()
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    save_config(config, output)
    digest = config_digest(config)
    run_stages = run_stages_ray if executor == "ray" else run_stages_in_process
    if executor == "ray":
        from hades_ray.ray_runtime import init_ray

        init_ray(config.ray.address, config.ray.num_cpus)
    skipped = processed = 0
    wave: list[tuple[int, list[InputRow], str]] = []
    shards = iter_shards(read_rows(input_path, limit), config.perturb.read.shard_size)
    for shard, rows in itertools.chain(shards, [(None, None)]):
        if shard is not None:
            fingerprint = shard_fingerprint(rows, digest)
            if _check_or_skip(output, shard, fingerprint, force):
                skipped += 1
                continue
            wave.append((shard, rows, fingerprint))
        if wave and (shard is None or len(wave) >= shards_per_wave):
            processed += _run_wave(wave, config, output, run_stages)
            wave = []
    return _write_summary(output, skipped, processed, time.perf_counter() - started)


def _run_wave(wave, config: HadesConfig, output: Path, run_stages) -> int:
    expected = {shard: len(rows) for shard, rows, _ in wave}
    fingerprints = {shard: fp for shard, _, fp in wave}
    items = [item for shard, rows, _ in wave for item in _row_dicts(shard, rows)]
    buffers: dict[int, dict[int, dict]] = defaultdict(dict)
    written = 0
    for row in run_stages(items, config):
        shard = int(row["shard"])
        buffers[shard][int(row["row"])] = row  # keyed: a recomputed block can never duplicate a row
        if len(buffers[shard]) == expected[shard]:
            _finish_shard(output, shard, list(buffers.pop(shard).values()), config, fingerprints[shard])
            written += 1
    if buffers:
        missing = {s: expected[s] - len(b) for s, b in buffers.items()}
        raise RuntimeError(f"rows missing from shards after the pipeline ended: {missing}")
    return written


def _finish_shard(output: Path, shard: int, rows: list[dict], config: HadesConfig, fingerprint: str) -> None:
    pool, instances, quarantine, counts, timings = _shard_outputs(shard, rows, config)
    stats = {"shard": shard, "fingerprint": fingerprint, "counts": dict(counts), "stage_seconds": timings}
    write_shard(output, shard, pool, instances, quarantine, stats)
    log.info("shard %05d: %s", shard, dict(counts))


def _write_summary(output: Path, skipped: int, processed: int, seconds: float) -> dict:
    shards = finished_shards(output)
    merge_views(output, shards)
    counts: Counter = Counter()
    stage_seconds: Counter = Counter()
    for shard in shards:
        marker = read_marker(output, shard)
        counts.update(marker["counts"])
        stage_seconds.update(marker.get("stage_seconds", {}))
    reasons = {k: v for k, v in counts.items() if k not in ("read", "kept", "perturbed", "instances", "quarantined")}
    summary = {
        "read": counts["read"],
        "kept": counts["kept"],
        "too_short": counts["too_short"],
        "no_maskable_words": counts["no_maskable_words"],
        "quarantined": counts["quarantined"],
        "quarantined_by_reason": {k: v for k, v in sorted(reasons.items()) if k not in QUARANTINE_KEEPS},
        "perturbed": counts["perturbed"],
        "instances": counts["instances"],
        "shards": {"total": len(shards), "processed_now": processed, "skipped_finished": skipped},
        "timings": {
            "wall_seconds": round(seconds, 3),
            "stage_busy_seconds": {k: round(v, 3) for k, v in sorted(stage_seconds.items())},
        },
    }
    atomic_write_text(output / "summary.json", json.dumps(summary, indent=2))
    return summary
