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


def test_learnability_files_split_a_pool_by_document_into_named_files(tmp_path):
    from pathlib import Path

    from hades_ray.config import load_config
    from hades_ray.train.learnability import learnability_files

    config = load_config("local")
    out = learnability_files(config, tmp_path, None, 0, {"train": 0.5, "valid": 0.5}, pool=_pool(tmp_path))
    assert [Path(p).name for p in out["paths"]] == ["train.jsonl", "valid.jsonl"]
    assert sum(out["instances"].values()) == 12 and "perturb_seconds" not in out
    written = [len(Path(p).read_text().splitlines()) for p in out["paths"]]
    assert written == [out["instances"]["train"], out["instances"]["valid"]]


def test_swapped_word_instances_alternate_labels_and_keep_the_texts_words():
    from hades_ray.train.learnability import swapped_word_instances

    texts = [" ".join(f"w{d}_{k}" for k in range(15)) for d in range(4)] + ["too short"]
    made = swapped_word_instances(texts, 6, seed=1)
    assert [i.label for i in made] == [0, 1, 0, 1, 0, 1] and made == swapped_word_instances(texts, 6, seed=1)
    for inst in made:
        doc = inst.words[0].split("_")[0]
        assert len(inst.words) == 15 and inst.start == inst.end
        assert inst.label == 1 or inst.words[inst.start].startswith(doc)  # an untouched word is its text's own
