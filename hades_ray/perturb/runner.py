"""The perturbation job's driver: plans shards, refuses stale or concurrent runs, streams the shards
through the stages (on Ray Data or in-process), and merges the workers' markers into the summary.

The driver never holds a shard's rows: workers read their shard, run the stages and write the
shard's files and marker themselves, and only a small stats row per shard comes back.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa

from hades_ray.config import RESOLVED_NAME, HadesConfig, resolved_yaml
from hades_ray.io.readers import plan_shards, read_shard
from hades_ray.perturb.artifacts import artifact_summary
from hades_ray.perturb.stages import perturb_stages
from hades_ray.perturb.writer import EMPTY_SHARD_ROW, QUARANTINE_KEEPS, write_shards
from hades_ray.pipeline import storage
from hades_ray.pipeline.executor import log_progress, run_shards
from hades_ray.pipeline.lock import OutputLock
from hades_ray.pipeline.shards import Shard, part_name, read_markers
from hades_ray.ray_runtime import task_mapper

log = logging.getLogger(__name__)
TOTALS = ("read", "kept", "perturbed", "instances", "quarantined")


class StaleShardError(FileExistsError):
    """A finished shard was made from other input or another config."""


def config_digest(config: HadesConfig) -> str:
    """What the output depends on, named one by one so that a new section never changes it: the preset,
    seed, spaCy model, models and the perturb section without its resources."""
    perturb = dataclasses.asdict(config.perturb)
    del perturb["resources"]
    relevant = {"preset": config.preset, "seed": config.seed, "spacy_model": config.spacy_model}
    relevant |= {"models": dataclasses.asdict(config.models), "perturb": perturb}
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()


def read_with_fingerprint(digest: str, shard: Shard) -> pa.Table:
    """The shard's rows, each carrying the shard's fingerprint for the marker (a placeholder row when
    the shard has none, so that its marker is still written)."""
    table = read_shard(shard)
    if table.num_rows == 0:
        placeholder = {"shard": shard.index, "row": EMPTY_SHARD_ROW, "doc_id": "", "title": "", "text": ""}
        placeholder |= {"source": "", "reject": "empty_shard", "shard_rows": 0}
        table = pa.Table.from_pylist([placeholder], schema=table.schema)
    fingerprint = shard.fingerprint(digest)
    return table.append_column("fingerprint", pa.array([fingerprint] * table.num_rows, pa.string()))


def plan_work(shards: list[Shard], markers: dict[int, dict], digest: str, force: bool) -> tuple[list[Shard], int]:
    """(shards to run, shards already finished); raises when finished shards would mix with new ones."""
    planned = {s.index for s in shards}
    other_config = sorted(i for i, m in markers.items() if m.get("config_digest") != digest)
    if force:
        left = [i for i in other_config if i not in planned]
        if left:
            raise StaleShardError(
                f"--force redoes shards {_ranges(sorted(planned))} only, but shards {_ranges(left)} of this output "
                "were made under another config and would be mixed with the new ones; rerun with --force over "
                "the whole input (no --limit), or write to a new --output"
            )
        return shards, 0
    stale = [
        s.index for s in shards if s.index in markers and markers[s.index].get("fingerprint") != s.fingerprint(digest)
    ]
    stale += [i for i in other_config if i not in stale]
    if stale:
        raise StaleShardError(
            f"shards {_ranges(sorted(stale))} of this output were made from other input rows or another config; "
            "rerun with --force to redo them, or write to a new --output"
        )
    todo = [s for s in shards if s.index not in markers]
    return todo, len(shards) - len(todo)


def _ranges(indices: list[int]) -> str:
    shown = ", ".join(part_name(i) for i in indices[:5])
    return shown + (f" and {len(indices) - 5} more" if len(indices) > 5 else "")


def run_perturb(
    config: HadesConfig,
    input_path: str | Path,
    output_dir: str | Path,
    limit: int | None = None,
    force: bool = False,
    executor: str = "ray",
    sample: int | None = None,
) -> dict:
    """Perturb ``input_path`` (a file, a folder, a URI, or ``demo``) into ``output_dir``; returns the summary."""
    started = time.perf_counter()
    output = str(output_dir)
    digest = config_digest(config)
    _check_models(config)
    with OutputLock(output):
        mapper = task_mapper(config.ray.address, config.ray.num_cpus) if executor == "ray" else None
        shards = plan_shards(str(input_path), config.perturb.read.shard_size, limit, sample, config.seed, mapper)
        todo, skipped = plan_work(shards, read_markers(output), digest, force)
        storage.write_text(storage.join(output, RESOLVED_NAME), resolved_yaml(config))
        log.info("%d shards planned: %d to run, %d already finished", len(shards), len(todo), skipped)
        stages = perturb_stages(config)
        read = functools.partial(read_with_fingerprint, digest)
        write = functools.partial(
            write_shards, output=output, config_digest=digest, lowercase=config.perturb.lowercase_instances
        )
        log_progress(run_shards(executor, todo, read, stages, write, config.ray.check_resources), len(todo), "written")
        return write_summary(output, len(todo), skipped, time.perf_counter() - started)


def _check_models(config: HadesConfig) -> None:
    """A model path that does not exist is a user error here, not an actor failing on a worker."""
    from hades_ray.models.registry import resolve_model

    resolve_model(config.models.mlm)
    resolve_model(config.models.causal_lm)


def write_summary(output: str, processed: int, skipped: int, seconds: float) -> dict:
    """Merge every finished shard's marker into ``summary.json``, and rebuild the merged JSONL views."""
    markers = read_markers(output)
    shards = sorted(markers)
    for view in ("instances", "quarantine"):
        parts = [storage.join(output, view, f"{part_name(i)}.jsonl") for i in shards]
        storage.concatenate(parts, storage.join(output, f"{view}.jsonl"))
    counts: Counter = Counter()
    stage_seconds: Counter = Counter()
    artifacts: Counter = Counter()
    for marker in markers.values():
        counts.update(marker["counts"])
        stage_seconds.update(marker.get("stage_seconds", {}))
        artifacts.update(marker.get("artifacts", {}))
    reasons = {k: v for k, v in counts.items() if k not in TOTALS and k not in QUARANTINE_KEEPS}
    summary = {
        "read": counts["read"],
        "kept": counts["kept"],
        "too_short": counts["too_short"],
        "no_maskable_words": counts["no_maskable_words"],
        "quarantined": counts["quarantined"],
        "quarantined_by_reason": dict(sorted(reasons.items())),
        "perturbed": counts["perturbed"],
        "instances": counts["instances"],
        "artifacts": artifact_summary(artifacts),
        "shards": {"total": len(shards), "processed_now": processed, "skipped_finished": skipped},
        "timings": {
            "wall_seconds": round(seconds, 3),
            "stage_busy_seconds": {k: round(v, 3) for k, v in sorted(stage_seconds.items())},
        },
    }
    storage.write_text(storage.join(output, "summary.json"), json.dumps(summary, indent=2))
    return summary
