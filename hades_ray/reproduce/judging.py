"""The decoding study's replacements as items for judges, through the project's annotations path.

Every replaced span of every setting's kept texts becomes one item of round 0 of a judging work folder
(``round-000/batch.jsonl``, the HaDes records that the selection rounds write, built by the same
``hades_record`` and ``display_original`` of hades_ray/select/batch.py); ``export_items``
(hades_ray/annotate/export.py) writes the judges' CSV with the study's question. Judgments come back with

    hades-ray annotations import --workdir OUT/decoding/judging --round 0 FILE

and consensus is computed as for any round (H = incoherent, N = coherent, per ``QUESTION``). Item ids
are opaque digests and the items are shuffled with the seed, so judges do not see which decoding made a
replacement; ``key.jsonl`` maps each item back to its setting and the incoherence proxy's verdict.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from pathlib import Path

from hades_ray.pipeline import storage
from hades_ray.text.languages import DEFAULT_LANGUAGE as ENGLISH  # an English experiment
from hades_ray.pool.layout import round_dir
from hades_ray.pool.readers import pool_shards, read_pool_part

QUESTION = (
    "Does the highlighted replacement make the perturbed text incoherent: ungrammatical, nonsensical, or "
    "contradicting the text around it (H: incoherent), or does the text still read coherently (N)? "
    "Judge coherence only, not whether the replacement is true."
)


def item_id(label: str, instance_id: str) -> str:
    return "dec-" + hashlib.sha256(f"{label}\0{instance_id}".encode()).hexdigest()[:16]


def setting_items(label: str, pool: Path, rows: list[dict], spans: list[dict]) -> tuple[list[dict], list[dict]]:
    """(batch records, key rows) of one setting: the instances of its kept texts."""
    from hades_ray.select.batch import display_original, hades_record

    documents = {r["doc_id"]: r for r in rows}
    verdicts = {(s["doc_id"], s["original"], s["replacement"]): s for s in spans}
    items, key = [], []
    for shard in pool_shards(str(pool)):
        for row in read_pool_part(shard).to_pylist():
            if row["doc_id"] not in documents:
                continue
            text, start, end = display_original(row, documents, ENGLISH)
            iid = item_id(label, row["id"])
            items.append({**hades_record(row, -1, ENGLISH), "id": iid, "original_text": text, "original_start": start,
                          "original_end": end})  # fmt: skip
            proxy = verdicts.get((row["doc_id"], row["original_span"], row["replacement"]), {})
            key.append({"item_id": iid, "setting": label, "instance_id": row["id"], "doc_id": row["doc_id"],
                        "original_span": row["original_span"], "replacement": row["replacement"],
                        "surprisal_jump": proxy.get("jump"), "proxy_incoherent": proxy.get("incoherent")})  # fmt: skip
    return items, key


def write_round(workdir: Path, items: list[dict]) -> None:
    """round-000/batch.jsonl; a rerun must make the same items (judgments may already refer to them)."""
    path = round_dir(workdir, 0) / "batch.jsonl"
    text = "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items)
    if path.is_file() and path.read_text(encoding="utf-8") != text:
        raise FileExistsError(f"{path} holds other items; judge them there or choose a new --output")
    if not path.is_file():
        storage.write(path, text)


def export_for_judges(config, workdir: Path, rows_by_setting: dict[str, tuple]) -> dict:
    """Write the judging round and its CSV export; returns what decoding.json records."""
    from hades_ray.annotate.export import export_items

    items, key = [], []
    for label, (pool, rows, spans) in rows_by_setting.items():
        more_items, more_key = setting_items(label, pool, rows, spans)
        items, key = items + more_items, key + more_key
    order = list(range(len(items)))
    random.Random(config.seed).shuffle(order)
    write_round(workdir, [items[k] for k in order])
    storage.write(workdir / "key.jsonl", "".join(json.dumps(k, ensure_ascii=False) + "\n" for k in key))
    judged = copy.deepcopy(config)
    judged.annotate.question = QUESTION
    export = export_items(judged, workdir, 0, "csv")
    return {"workdir": str(workdir), "items": len(items), "export": export["export"], "files": export["files"],
            "key": str(workdir / "key.jsonl"), "question": QUESTION,
            "import": f"hades-ray annotations import --workdir {workdir} --round 0 FILE"}  # fmt: skip
