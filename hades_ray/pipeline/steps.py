"""Steps: units of work that are not shards (a detector fit, a fold, a sweep, a trial, a round's batch),
under the engine's one skip policy (``shards.plan_work``).

A step is one unit, ``part-00000``, of its ``output`` folder: its fingerprint covers its name, the
identity of its inputs and its settings digest, and its marker (``OUTPUT/_markers/part-00000.json``,
written last) holds its result. A rerun skips a finished step with the same fingerprint and returns
the recorded result; a finished step made from other inputs or settings stops the run, naming it,
unless ``force`` redoes it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hades_ray.pipeline.lock import OutputLock
from hades_ray.pipeline.shards import Shard, StaleShardError, plan_work, read_markers, write_marker
from hades_ray.pipeline.storage import _jsonable


def digest_of(value) -> str:
    """A settings or inputs digest: the JSON of ``value`` (keys sorted), hashed."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def files_identity(*paths) -> str:
    """What identifies input files (path, size, modification time), as a shard's ``identity`` does; a
    missing file by its path alone (reading it fails later, naming it)."""
    stats = [Path(p).stat() if Path(p).exists() else None for p in paths]
    return digest_of([[str(p), *((s.st_size, s.st_mtime_ns) if s else ())] for p, s in zip(paths, stats)])


@dataclass
class Step:
    """A declared step: ``run()`` does the work (writing its files under ``output``) and returns its
    result, which must be JSON; ``inputs`` identifies what it reads, ``digest`` its settings."""

    name: str  # in its messages: "round 1", "round 1's detector", "trial LR-offline"
    output: str  # the folder holding the step's files and its marker
    digest: str
    run: Callable[[], dict | None]
    inputs: str = ""

    @property
    def unit(self) -> Shard:
        return Shard(0, self.name, "step", 0, 1, identity=self.inputs)


def must_run(step: Step, force: bool = False) -> bool:
    """Whether ``step`` has work to do; raises when it finished from other inputs or settings (unless ``force``)."""
    try:
        todo, _ = plan_work([step.unit], read_markers(step.output), step.digest, force)
    except StaleShardError as error:
        raise StaleShardError(f"{step.name} ({step.output}): {error}") from None
    return bool(todo)


def run_step(step: Step, force: bool = False) -> dict | None:
    """The step's result: recorded when it finished with this fingerprint, else computed now (and recorded)."""
    with OutputLock(step.output):
        if not must_run(step, force):
            return read_markers(step.output)[0]["result"]
        result = json.loads(json.dumps(step.run(), default=_jsonable))  # what a rerun will read back
        marker = {"shard": 0, "fingerprint": step.unit.fingerprint(step.digest), "digest": step.digest}
        write_marker(step.output, 0, {**marker, "result": result, "finished_at": time.time()})  # last
        return result
