"""Test helpers (no tests here): a synthetic pool in the perturbation job's layout and a stand-in detector API."""

from __future__ import annotations

import json
import types
import zlib
from pathlib import Path

import numpy as np

SWAPS = [  # (original, replacement): dates, names, paraphrases, unrelated words, same lemma
    ("1932", "1954"),
    ("March", "June"),
    ("Smith", "Jones"),
    ("Anna", "Maria"),
    ("large", "big"),
    ("city", "town"),
    ("river", "banana"),
    ("physicist", "footballer"),
    ("wrote", "writes"),
    ("London", "Paris"),
    ("novel", "sandwich"),
    ("famous", "well-known"),
]


def build_pool(directory: Path, n_docs: int = 12) -> Path:
    """``directory/instances.jsonl`` (and a Parquet part) with one instance per (doc, swap) pair."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = []
    for d in range(n_docs):
        for s, (orig, repl) in enumerate(SWAPS):
            words = (
                f"Doc {d} : Anna Smith was born in March 1932 in London , a large city by the river ."
                f" She wrote a famous novel and became a physicist <{repl}> & more ."
            ).split()
            i = words.index(f"<{repl}>")
            words[i] = repl
            lines.append(
                {
                    "replaced": " ".join(words[:i] + [f"==={repl}==="] + words[i + 1 :]),
                    "replaced_ids": [i, i],
                    "hallucination": -1,
                    "id": f"d{d}-s{s}",
                    "doc_id": f"d{d}",
                    "original_span": orig,
                }
            )
    path = directory / "instances.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return directory


def _p(instance_id: str) -> float:
    return (zlib.crc32(instance_id.encode()) % 1000) / 1000.0


def fake_detect_api():
    """A module with detect.api's contract; p(H) is a hash of the id, so runs are reproducible."""
    module = types.ModuleType("hades_ray.detect.api")
    calls = {"train": 0}

    def train_detector(config, train_path, valid_path, output_dir, detector="transformer", mode="offline", workers=1):
        calls["train"] += 1
        output_dir = Path(output_dir)
        output_dir.mkdir(parents=True, exist_ok=True)
        (output_dir / "config.json").write_text("{}")
        return output_dir

    def predict_file(model_dir, data_path, output_path, config=None):
        records = [json.loads(x) for x in Path(data_path).read_text().splitlines() if x.strip()]
        with open(output_path, "w") as handle:
            for r in records:
                p = _p(r["id"])
                handle.write(json.dumps({"id": r["id"], "p_hallucination": p, "pred": int(p >= 0.5)}) + "\n")
        return Path(output_path)

    def evaluate_file(model_dir, data_path):
        return {"accuracy": 0.5, "n": sum(1 for _ in open(data_path))}

    def score_records(model_dir, records):
        return np.array([_p(r["id"]) for r in records])

    module.train_detector, module.predict_file = train_detector, predict_file
    module.evaluate_file, module.score_records, module.calls = evaluate_file, score_records, calls
    return module
