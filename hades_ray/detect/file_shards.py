"""A HaDes file cut into the shards of a sharded job over its instances (``predict``, ``evaluate``, and the
span-representation store of a file, ``reps.py``): ``SHARD_ROWS`` instances a shard, as line ranges."""

from __future__ import annotations

import pyarrow as pa

from hades_ray.detect.data import is_labelled
from hades_ray.detect.scoring import SHARD_ROWS, instances_table
from hades_ray.io.hades_format import HadesFormatError, instance_from_line
from hades_ray.io.readers import file_identity, index_jsonl, shard_lines
from hades_ray.pipeline.job import Mapper
from hades_ray.pipeline.shards import Shard


def plan_scoring(source: str, rows: list[int], mapper: Mapper, every: int = 0) -> list[Shard]:
    """Shards of ``every`` (0: ``SHARD_ROWS``) scored instances each, as line ranges of ``source`` (seeking
    from the file's line index, as ``hades_ray/io/readers.py`` does for every JSONL input)."""
    if not rows:
        return []
    every = every or SHARD_ROWS
    _, offsets = mapper(lambda path: index_jsonl(path, every), [source])[0]  # a Ray task takes no partial
    identity, shards = file_identity(source), []
    for k, lo in enumerate(range(0, len(rows), every)):
        first, hi = rows[lo], lo + every
        end = rows[hi] if hi < len(rows) else rows[-1] + 1
        indexed = first // every
        shards.append(Shard(k, source, "jsonl", first, end, offsets[indexed], indexed * every, identity))
    return shards


def read_scoring_shard(labelled_only: bool, shard: Shard) -> pa.Table:
    """A worker's read: ``row`` and the span columns of the shard's instances (bad lines were failed or
    quarantined by the driver before the run; they and blank lines are passed over here)."""
    rows, instances = [], []
    for row, raw, where, _ in shard_lines(shard):
        try:
            instance = instance_from_line(raw, row + 1, where)
        except HadesFormatError:
            continue
        if instance is not None and (is_labelled(instance) or not labelled_only):
            rows.append(row)
            instances.append(instance)
    return instances_table(instances).add_column(0, "row", pa.array(rows, pa.int64()))
