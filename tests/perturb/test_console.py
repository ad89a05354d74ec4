"""What a run prints as its examples: the kept documents RANK found most fluent, by that rule alone."""

from __future__ import annotations

import pyarrow as pa

from hades_ray.perturb import console
from hades_ray.pipeline import storage


def _pool(output, shards: dict[int, list[tuple[str, float]]]) -> None:
    for shard, rows in shards.items():
        table = pa.table({"doc_id": [d for d, _ in rows], "ppl": [p for _, p in rows], "title": ["t"] * len(rows)})
        storage.write_table(str(output / "pool" / f"part-{shard:05d}.parquet"), table)


def test_examples_are_the_lowest_perplexity_kept_documents_whatever_their_shard(tmp_path, monkeypatch):
    _pool(tmp_path, {0: [("a", 9.0), ("b", 3.0)], 1: [("c", 1.5), ("d", 3.0)], 2: [("e", 0.5)]})
    monkeypatch.setattr(console, "finished_shards", lambda output: [0, 1])  # shard 2 is not finished
    rows = console.lowest_perplexity_rows(tmp_path, 3)
    assert [(row["doc_id"], row["ppl"]) for row in rows] == [("c", 1.5), ("b", 3.0), ("d", 3.0)]  # ties by id
    assert rows[0]["title"] == "t"  # whole rows, for printing
    assert [row["doc_id"] for row in console.lowest_perplexity_rows(tmp_path, 10)] == ["c", "b", "d", "a"]
