"""The layout of a work directory: the pool (the perturbation job's output) and one folder per round.

WORKDIR/workdir.json          {"pool": PATH} when the pool lives elsewhere (else WORKDIR/pool)
WORKDIR/features/             model-free scores of every pool instance (similarity, NER, lemmas)
WORKDIR/round-000/            batch.jsonl (items for judges), round.json (every count), scores,
                              judgments/import-NNN[.simulated].csv, quarantine/, exports/
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from hades_ray.io.hades_format import read_instances

WORKDIR_FILE = "workdir.json"


def round_dir(workdir: str | Path, round_index: int) -> Path:
    return Path(workdir) / f"round-{round_index:03d}"


def existing_rounds(workdir: str | Path) -> list[int]:
    return sorted(int(p.name.split("-")[1]) for p in Path(workdir).glob("round-[0-9][0-9][0-9]") if p.is_dir())


def set_pool(workdir: str | Path, pool: str | Path) -> None:
    """Record where the pool lives; a recorded pool is never silently replaced by another."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / WORKDIR_FILE
    pool = str(Path(pool).resolve())
    if path.is_file():
        recorded = json.loads(path.read_text())["pool"]
        if recorded != pool:
            raise FileExistsError(f"{workdir} already uses the pool {recorded}; not switching to {pool}")
        return
    write_json_atomic(path, {"pool": pool})


def pool_dir(workdir: str | Path) -> Path:
    workdir = Path(workdir)
    path = workdir / WORKDIR_FILE
    pool = Path(json.loads(path.read_text())["pool"]) if path.is_file() else workdir / "pool"
    if not (pool / "instances.jsonl").is_file():
        raise FileNotFoundError(
            f"no pool at {pool} (expected the perturbation job's instances.jsonl there); "
            "run `hades-ray perturb` into WORKDIR/pool or pass --pool"
        )
    return pool


def load_pool(workdir: str | Path) -> pd.DataFrame:
    """Every pool instance, one row each: id, doc_id, words, start, end, replacement, original_span."""
    rows = []
    for inst in read_instances(pool_dir(workdir) / "instances.jsonl"):
        extra = inst.extra
        replacement = " ".join(inst.span_words)
        rows.append(
            {
                "id": str(extra["id"]),
                "doc_id": str(extra.get("doc_id", extra["id"])),
                "words": inst.words,
                "start": inst.start,
                "end": inst.end,
                "replacement": extra.get("replacement") or replacement,
                "original_span": str(extra.get("original_span", "")),
            }
        )
    frame = pd.DataFrame(rows, columns=["id", "doc_id", "words", "start", "end", "replacement", "original_span"])
    if frame["id"].duplicated().any():
        raise ValueError(f"pool instance ids are not unique: {frame['id'][frame['id'].duplicated()].iloc[0]!r}")
    return frame


def original_words(row) -> list[str]:
    """The instance's words with its own span put back (other replaced spans stay as they are)."""
    words = list(row["words"])
    return words[: row["start"]] + str(row["original_span"]).split() + words[row["end"] + 1 :]


def pool_documents(workdir: str | Path) -> dict[str, dict]:
    """doc_id -> {"original", "spans"} from the pool's Parquet parts, where present (for display)."""
    parts = sorted((pool_dir(workdir) / "pool").glob("part-*.parquet"))
    if not parts:
        return {}
    frame = pd.concat([pd.read_parquet(p, columns=["doc_id", "original", "spans"]) for p in parts])
    return {str(r.doc_id): {"original": r.original, "spans": list(r.spans)} for r in frame.itertuples()}


def write_json_atomic(path: str | Path, data) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=_jsonable) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def write_parquet_atomic(frame: pd.DataFrame, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    frame.to_parquet(tmp, index=False)
    os.replace(tmp, path)
    return path


def _jsonable(value):
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON serializable: {type(value)}")
