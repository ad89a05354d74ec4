"""The layout of a work directory: where the pool is, and one folder per round.

WORKDIR/workdir.json          {"pool": PATH or URI} when the pool lives elsewhere (else WORKDIR/pool)
WORKDIR/features/             part-NNNNN.parquet per pool shard (similarity, NER, POS, lemmas) + _markers/
WORKDIR/round-000/            batch.jsonl (items for judges), round.json (every count), scores/ and
                              candidates/ (part-NNNNN.parquet per pool shard + _markers/, written by
                              workers), judgments/, quarantine/, exports/

The work directory itself is a local folder (judgments are imported into it); the pool may be a local
folder or any ``pyarrow.fs`` URI (``s3://``...). Pool shards are read from the perturbation job's
``instances/part-NNNNN.parquet``, and only where ``_markers/part-NNNNN.json`` exists (a shard without
its marker may be half written); the merged ``instances.jsonl`` is for people and is never read here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from hades_ray.pipeline import storage
from hades_ray.pipeline.shards import Shard, part_name, read_markers
from hades_ray.pipeline.steps import digest_of
from hades_ray.text.languages import Language
from hades_ray.text.words import span_words

WORKDIR_FILE = "workdir.json"
# The pool as the perturbation job writes it (hades_ray/perturb/writer.py): a document's spans, its
# ``pool/`` and ``instances/`` parts.
SPAN_TYPE = pa.struct(
    [
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("orig_start", pa.int64()),
        ("orig_end", pa.int64()),
        ("original", pa.string()),
        ("replacement", pa.string()),
        ("ner", pa.string()),
        ("pos", pa.string()),
    ]
)
POOL_SCHEMA = pa.schema(
    [
        ("doc_id", pa.string()),
        ("title", pa.string()),
        ("original", pa.string()),
        ("perturbed", pa.string()),
        ("ppl", pa.float64()),
        ("candidate", pa.int32()),
        ("candidate_ppls", pa.list_(pa.float64())),
        ("spans", pa.list_(SPAN_TYPE)),
        ("shard", pa.int32()),
        ("row", pa.int64()),
    ]
)
INSTANCE_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("doc_id", pa.string()),
        ("words", pa.list_(pa.string())),
        ("start", pa.int32()),
        ("end", pa.int32()),
        ("replacement", pa.string()),
        ("original_span", pa.string()),
        ("ner", pa.string()),
        ("pos", pa.string()),
        ("hallucination", pa.int8()),
    ]
)
# The instance columns selection reads.
POOL_COLUMNS = ("id", "doc_id", "words", "start", "end", "replacement", "original_span")


def round_dir(workdir: str | Path, round_index: int) -> Path:
    return Path(workdir) / f"round-{round_index:03d}"


def existing_rounds(workdir: str | Path) -> list[int]:
    return sorted(int(p.name.split("-")[1]) for p in Path(workdir).glob("round-[0-9][0-9][0-9]") if p.is_dir())


def set_pool(workdir: str | Path, pool: str | Path) -> None:
    """Record where the pool lives; a recorded pool is never silently replaced by another."""
    workdir = Path(workdir)
    storage.makedirs(workdir)
    path = workdir / WORKDIR_FILE
    pool = str(pool) if storage.is_uri(pool) else str(Path(pool).resolve())
    if path.is_file():
        recorded = json.loads(path.read_text())["pool"]
        if recorded != pool:
            raise FileExistsError(f"{workdir} already uses the pool {recorded}; not switching to {pool}")
        return
    storage.write_json_atomic(path, {"pool": pool})


def pool_dir(workdir: str | Path) -> str:
    """The pool's path or URI; raises when it holds no finished shard."""
    path = Path(workdir) / WORKDIR_FILE
    pool = json.loads(path.read_text())["pool"] if path.is_file() else str(Path(workdir) / "pool")
    if not read_markers(pool):
        raise FileNotFoundError(
            f"no finished pool shard at {pool} (expected the perturbation job's _markers/part-NNNNN.json and "
            "instances/part-NNNNN.parquet there); run `hades-ray perturb` into WORKDIR/pool or pass --pool"
        )
    return pool


def part_path(folder: str, index: int) -> str:
    """Pool shard ``index``'s part in a folder of parts (the pool's ``instances``, ``features``, a
    round's ``scores`` and ``candidates``): each folder reads as one Parquet dataset."""
    return storage.join(folder, f"{part_name(index)}.parquet")


def write_part(folder: str, schema: pa.Schema, index: int, table: pa.Table) -> dict:
    """A pass's writer (on a worker): shard ``index``'s part holds ``schema``'s columns of ``table``.
    Returns no stats of its own (the engine's marker records the rows)."""
    storage.write_table(part_path(folder, index), table.select(schema.names).cast(schema))
    return {}


def pool_shards(pool: str) -> list[Shard]:
    """One shard per finished pool part (its marker's digest as identity: a redone part is a new shard)."""
    shards = []
    for index, marker in sorted(read_markers(pool).items()):
        rows = int(marker.get("counts", {}).get("instances", 0))
        path = part_path(storage.join(pool, "instances"), index)
        shards.append(Shard(index, path, "parquet", 0, rows, identity=digest_of(marker)))
    return shards


def read_pool_part(shard: Shard, columns: tuple[str, ...] = POOL_COLUMNS) -> pa.Table:
    """One pool shard's instances (in the shard's own row order)."""
    return storage.read_parquet(shard.source, list(columns))


def original_span_words(row, language: Language) -> list[str]:
    """The words of the instance's original span (``text.words.span_words``: whitespace-separated in English,
    as its instances have always been rebuilt; the language's words elsewhere)."""
    return span_words(str(row["original_span"]), language)


def original_words(row, language: Language) -> list[str]:
    """The instance's words with its own span put back (other replaced spans stay as they are)."""
    found = list(row["words"])
    return found[: row["start"]] + original_span_words(row, language) + found[row["end"] + 1 :]


def pool_documents(workdir: str | Path, doc_ids_by_shard: dict[int, set[str]]) -> dict[str, dict]:
    """doc_id -> {"original", "spans"} for the given documents of the given pool shards (for display)."""
    pool = pool_dir(workdir)
    out: dict[str, dict] = {}
    for index, doc_ids in sorted(doc_ids_by_shard.items()):
        path = part_path(storage.join(pool, "pool"), index)
        if not storage.exists(path):
            continue
        table = storage.read_parquet(path, ["doc_id", "original", "spans"])
        wanted = pc.is_in(table.column("doc_id"), value_set=pa.array(sorted(doc_ids), pa.string()))
        for row in table.filter(wanted).to_pylist():
            out[str(row["doc_id"])] = {"original": row["original"], "spans": row["spans"]}
    return out
