"""Consensus labels of the judged items, per round: what detectors train on and the dataset holds."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from hades_ray.pool.consensus import agreement_report, item_table
from hades_ray.pool.layout import existing_rounds
from hades_ray.pool.rounds import batch_items, load_judgments


def round_table(config, workdir: str | Path, round_index: int, items: list[dict] | None = None) -> pd.DataFrame:
    """One row per item of the round's batch (``items`` when read already): votes, status, consensus label."""
    items = batch_items(workdir, round_index) if items is None else items
    return item_table([str(i["id"]) for i in items], load_judgments(workdir, round_index), config.annotate)


def items_over_rounds(configs: dict[int, object], workdir: str | Path) -> pd.DataFrame:
    """Every item of the rounds ``configs`` names (each round's items under its own config), pooled as the
    paper reports its figures for the whole dataset."""
    return pd.concat([round_table(config, workdir, k) for k, config in sorted(configs.items())], ignore_index=True)


def round_labels(config, workdir: str | Path, round_index: int) -> tuple[list[dict], dict]:
    """(batch records with ``hallucination`` set by consensus, agreement report) of one round."""
    items = batch_items(workdir, round_index)
    table = round_table(config, workdir, round_index, items)
    labels = dict(zip(table["item_id"], table["label"]))
    status = dict(zip(table["item_id"], table["status"]))
    labeled = [
        {**item, "hallucination": int(labels[str(item["id"])]), "round": round_index}
        for item in items
        if status[str(item["id"])] == "consensus"
    ]
    return labeled, agreement_report(table)


def consensus_items(config, workdir: str | Path, rounds: list[int] | None = None) -> list[dict]:
    """Every consensus-labeled item of ``rounds`` (default: every round that has a batch)."""
    rounds = existing_rounds(workdir) if rounds is None else rounds
    records: list[dict] = []
    for k in rounds:
        if (Path(workdir) / f"round-{k:03d}" / "batch.jsonl").is_file():
            records += round_labels(config, workdir, k)[0]
    return records
