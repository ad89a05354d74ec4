"""Lead files as the benchmarks read them (hades_ray/io/leads.py)."""

from __future__ import annotations

import json

from hades_ray.io.leads import lead_texts, repeated_leads


def test_the_first_texts_and_a_corpus_repeated_with_new_ids(tmp_path):
    source = tmp_path / "leads.jsonl"
    source.write_text("".join(json.dumps({"id": f"d{k}", "text": f"Lead {k}."}) + "\n" for k in range(3)))
    assert lead_texts(source, 2) == ["Lead 0.", "Lead 1."] and len(lead_texts(source, 10)) == 3
    made = repeated_leads(source, 7, tmp_path / "out" / "big.jsonl")
    records = [json.loads(line) for line in made.read_text().splitlines()]
    assert [r["id"] for r in records] == ["r0-d0", "r0-d1", "r0-d2", "r1-d0", "r1-d1", "r1-d2", "r2-d0"]
    assert [r["text"] for r in records[3:5]] == ["Lead 0.", "Lead 1."]
