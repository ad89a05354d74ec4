"""The dataset: consensus items in HaDes format, split by document, with the paper's Fig. 4 as numbers."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from hades_ray.config import save_config
from hades_ray.io.hades_format import LANGUAGE_FIELD, RECORD_FIELDS, write_instances
from hades_ray.pipeline.storage import write, write_json_atomic
from hades_ray.pool.feature_job import compute_features
from hades_ray.pool.labels import consensus_items
from hades_ray.pool.rounds import simulated_rounds

SPLITS = ("train", "valid", "test")
HADES_KEYS = (*RECORD_FIELDS, "round", LANGUAGE_FIELD)  # language: non-English records only


def split_documents(doc_sizes: dict[str, int], shares: list[float], seed: int) -> dict[str, str]:
    """doc_id -> split, documents shuffled by seed and filled in order so instance counts follow ``shares``."""
    docs = sorted(doc_sizes)
    order = np.random.default_rng(seed).permutation(len(docs))
    total = sum(doc_sizes.values())
    bounds = np.cumsum(shares) * total
    assignment, filled = {}, 0
    for index in order:
        doc = docs[index]
        split = next((i for i, b in enumerate(bounds) if filled < b - 1e-9), len(SPLITS) - 1)
        assignment[doc] = SPLITS[split]
        filled += doc_sizes[doc]
    return assignment


def breakdown(frame: pd.DataFrame, column: str) -> dict:
    """{value: {"H": n, "N": n, "share_h": s}} for one feature of the original span."""
    out = {}
    for value, group in frame.groupby(column):
        h, n = int((group["label"] == 1).sum()), int((group["label"] == 0).sum())
        out[str(value) or "none"] = {"H": h, "N": n, "share_h": round(h / (h + n), 4)}
    return dict(sorted(out.items(), key=lambda kv: -(kv[1]["H"] + kv[1]["N"])))


def dataset_stats(frame: pd.DataFrame) -> dict:
    labels = Counter(frame["label"])
    per_split = {
        s: {
            "instances": int((frame["split"] == s).sum()),
            "H": int(((frame["split"] == s) & (frame["label"] == 1)).sum()),
            "documents": int(frame.loc[frame["split"] == s, "doc_id"].nunique()),
        }
        for s in SPLITS
    }
    return {
        "instances": len(frame),
        "H": labels.get(1, 0),
        "N": labels.get(0, 0),
        "share_h": round(labels.get(1, 0) / max(len(frame), 1), 4),
        "splits": per_split,
        "pos": breakdown(frame, "orig_pos"),
        "ner": breakdown(frame, "orig_ent"),
    }


def span_tags(frame: pd.DataFrame) -> dict[str, dict[str, str]]:
    """Each instance's original-span POS and NER type by id: the report's Table 4 groups the features by them."""
    return {str(i): {"pos": p, "ner": e} for i, p, e in zip(frame["id"], frame["orig_pos"], frame["orig_ent"])}


def stats_markdown(stats: dict) -> str:
    lines = [
        "# Dataset statistics",
        "",
        (f"{stats['instances']} instances: {stats['H']} H, {stats['N']} N (H share {stats['share_h']:.1%})."),
        "",
        "| split | instances | H | documents |",
        "|---|---|---|---|",
    ]
    lines += [f"| {s} | {v['instances']} | {v['H']} | {v['documents']} |" for s, v in stats["splits"].items()]
    for key, title in (("pos", "POS of the original span (Fig. 4)"), ("ner", "NER type of the original span (Fig. 4)")):
        lines += ["", f"## {title}", "", "| value | H | N | H share |", "|---|---|---|---|"]
        lines += [f"| {k} | {v['H']} | {v['N']} | {v['share_h']:.1%} |" for k, v in stats[key].items()]
    return "\n".join(lines) + "\n"


def build_dataset(config, workdir: str | Path, output: str | Path) -> dict:
    """Write train/valid/test.txt, stats.json and stats.md of every consensus item in the work directory."""
    output = Path(output)
    records = consensus_items(config, workdir)
    if not records:
        raise FileNotFoundError(f"no consensus judgments in {workdir}: import (or simulate) judgments first")
    features = compute_features(config, workdir, ids=[r["id"] for r in records]).set_index("id")
    frame = pd.DataFrame(
        {
            "id": [r["id"] for r in records],
            "doc_id": [r["doc_id"] for r in records],
            "label": [r["hallucination"] for r in records],
        }
    )
    frame["orig_pos"] = features.reindex(frame["id"])["orig_pos"].fillna("").values
    frame["orig_ent"] = features.reindex(frame["id"])["orig_ent"].fillna("").values
    splits = split_documents(frame.groupby("doc_id").size().to_dict(), config.annotate.split_shares(), config.seed)
    frame["split"] = frame["doc_id"].map(splits)
    for split in SPLITS:
        chosen = [{k: r[k] for k in HADES_KEYS if k in r} for r, s in zip(records, frame["split"]) if s == split]
        write_instances(chosen, output / f"{split}.txt")
    stats = dataset_stats(frame)
    # Whose labels these are: the report marks figures computed on simulated judgments as such.
    simulated = set(simulated_rounds(workdir))
    stats["simulated_rounds"] = sorted(simulated)
    stats["simulated_instances"] = sum(int(r["round"] in simulated) for r in records)
    write_json_atomic(output / "stats.json", stats)
    write_json_atomic(output / "tags.json", span_tags(frame))
    write(output / "stats.md", stats_markdown(stats))
    save_config(config, output)
    return stats
