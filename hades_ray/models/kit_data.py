"""The offline kit's text: demo-corpus leads split deterministically into train and held-out.

The split is a hash of the record id, so it never depends on corpus order or on which records a
later corpus version adds; only the held-out split is kept out of training, nothing else.
"""

from __future__ import annotations

import hashlib

HELDOUT_FRACTION = 0.1


def is_heldout(record_id: str, fraction: float = HELDOUT_FRACTION) -> bool:
    """Whether a record belongs to the held-out split (stable across runs and machines)."""
    digest = hashlib.sha256(record_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def split_texts(records: list[dict], fraction: float = HELDOUT_FRACTION) -> tuple[list[str], list[str]]:
    """(train texts, held-out texts) of the records with non-empty text, each in input order."""
    train, heldout = [], []
    for record in records:
        text = (record.get("text") or "").strip()
        if text:
            (heldout if is_heldout(record["id"], fraction) else train).append(text)
    return train, heldout


def demo_split(fraction: float = HELDOUT_FRACTION) -> tuple[list[str], list[str]]:
    """The demo corpus split into (train, held-out) leads."""
    from hades_ray.io.demo_corpus import read_demo_records

    return split_texts(read_demo_records(), fraction)
