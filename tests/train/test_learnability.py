"""The learnability check's labels from a synthetic perturbation pool (the perturb job's layout)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from hades_ray.train.learnability import pool_instances, split_by_doc
from hades_ray.text.languages import DEFAULT_LANGUAGE


def _span(text, orig_text, word, replacement):
    start = text.index(replacement)
    o = orig_text.index(word)
    return {
        "start": start,
        "end": start + len(replacement),
        "orig_start": o,
        "orig_end": o + len(word),
        "original": word,
        "replacement": replacement,
        "ner": "GPE",
        "pos": "PROPN",
    }


def _pool(tmp_path):
    rows = []
    for d in range(6):
        original = f"Doc {d} says the painter moved to Paris and painted the harbour there in summer."
        perturbed = original.replace("Paris", "Lisbon").replace("summer", "summer")
        spans = [_span(perturbed, original, "Paris", "Lisbon")]
        if d % 2:
            spans.append(_span(perturbed, original, "summer", "summer"))  # unchanged: not a hallucination
        rows.append({"doc_id": f"d{d}", "original": original, "perturbed": perturbed, "ppl": 1.0, "spans": spans})
    (tmp_path / "pool").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "pool" / "part-00000.parquet")
    return tmp_path / "pool"


def test_labels_from_pool(tmp_path):
    instances = pool_instances(_pool(tmp_path), seed=0, language=DEFAULT_LANGUAGE)
    positives = [i for i in instances if i.label == 1]
    negatives = [i for i in instances if i.label == 0]
    assert len(positives) == 6 and all(i.words[i.start : i.end + 1] == ["Lisbon"] for i in positives)
    assert len(negatives) == 6
    for inst in negatives:
        word = inst.words[inst.start]
        assert word.isalpha() and word.lower() not in {"the", "to", "and", "in", "there"} and word != "Lisbon"
    train, valid, test = split_by_doc(instances, (0.5, 0.25, 0.25), seed=0)
    docs = [{i.extra["doc_id"] for i in part} for part in (train, valid, test)]
    assert not (docs[0] & docs[1]) and not (docs[0] & docs[2]) and not (docs[1] & docs[2])
    assert sum(map(len, (train, valid, test))) == len(instances)
