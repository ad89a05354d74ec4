"""Input planning and reading without Ray: shards are exact row ranges, every bad row gets a reason,
unreadable inputs are one clear error."""

import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hades_ray.cli import main
from hades_ray.io.readers import MAX_LINE_BYTES, InputError, plan_shards, read_shard

GOOD = {"id": "ok", "text": "A fine first paragraph."}


def _rows(path, shard_size, **kwargs):
    rows = []
    for shard in plan_shards(str(path), shard_size, **kwargs):
        rows += read_shard(shard).to_pylist()
    return rows


@pytest.mark.parametrize("shard_size", [1, 3, 7, 50])
def test_jsonl_shards_cover_every_line_once_with_exact_line_numbers(tmp_path, shard_size):
    rng = random.Random(shard_size)
    lines = [json.dumps({"id": f"d{i}", "text": "x" * rng.randint(0, 40)}) if i % 9 else "" for i in range(40)]
    (tmp_path / "in.jsonl").write_text("\n".join(lines))  # no newline at the end, and blank lines
    rows = _rows(tmp_path / "in.jsonl", shard_size)
    expected = [i for i, line in enumerate(lines) if line]
    assert sorted(r["row"] for r in rows) == expected
    assert all(r["source"].endswith(f"in.jsonl:{r['row'] + 1}") for r in rows)
    assert all(r["doc_id"] == f"d{r['row']}" for r in rows)
    assert len(_rows(tmp_path / "in.jsonl", shard_size, limit=10)) == len([i for i in expected if i < 10])


BAD_LINES = {
    b"{not json": "invalid_json",
    b"\xff\xfe{}": "invalid_utf8",
    b"[" * 100_000 + b"]" * 100_000: "nested_too_deep",
    b'{"id": "n", "text": ' + b"[" * 5000 + b"]" * 5000 + b"}": "nested_too_deep",
    b"[1, 2, 3]": "not_an_object",
    b"42": "not_an_object",
    b'{"id": "m"}': "missing_text",
    b'{"id": "t", "text": 7}': "text_not_a_string",
    b'{"id": "t", "text": {"a": 1}}': "text_not_a_string",
    b'{"id": "big", "text": "' + b"a" * (MAX_LINE_BYTES + 10) + b'"}': "line_too_long",
    b'{"id": 1e999999, "text": 1}': "text_not_a_string",
}


def test_every_bad_jsonl_row_gets_a_reason_and_good_rows_survive(tmp_path):
    lines = [json.dumps(GOOD).encode(), *BAD_LINES, json.dumps(GOOD).encode()]
    (tmp_path / "bad.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    rows = sorted(_rows(tmp_path / "bad.jsonl", 4), key=lambda r: r["row"])
    assert len(rows) == len(lines)
    assert [r["reject"] for r in rows] == ["", *BAD_LINES.values(), ""]
    assert rows[-1]["text"] == GOOD["text"]


def test_parquet_row_ranges_and_wiki40b_markers(tmp_path):
    texts = [f"_START_ARTICLE_\nT{i}\n_START_PARAGRAPH_\nLead {i}._NEWLINE_Second" for i in range(25)]
    table = pa.table({"wikidata_id": [f"Q{i}" for i in range(25)], "text": texts})
    pq.write_table(table, tmp_path / "w.parquet", row_group_size=4)
    rows = _rows(tmp_path / "w.parquet", 6)
    assert sorted(r["row"] for r in rows) == list(range(25))
    assert {r["doc_id"]: r["text"] for r in rows}["Q7"] == "Lead 7."


def test_unreadable_inputs_are_one_clear_error(tmp_path, capsys, micro_home):
    pq.write_table(pa.table({"body": ["x"]}), tmp_path / "notext.parquet")
    (tmp_path / "corrupt.parquet").write_bytes(b"PAR1 this is not parquet")
    pq.write_table(pa.table({"text": [1, 2]}), tmp_path / "inttext.parquet")
    for name, words in (("notext", "'text' column"), ("corrupt", "not a readable Parquet"), ("inttext", "strings")):
        with pytest.raises(InputError, match=words):
            plan_shards(str(tmp_path / f"{name}.parquet"), 10)
        args = ["perturb", "--input", str(tmp_path / f"{name}.parquet"), "--output", str(tmp_path / "o")]
        assert main([*args, "--executor", "local"]) == 2
        err = capsys.readouterr().err
        assert f"{name}.parquet" in err and "Traceback" not in err


def test_sample_keeps_about_n_rows_and_widens_shards(tmp_path):
    (tmp_path / "in.jsonl").write_text("\n".join(json.dumps({"id": str(i), "text": "t"}) for i in range(1000)))
    shards = plan_shards(str(tmp_path / "in.jsonl"), 20, sample=100, seed=3)
    assert shards[0].rows == 200  # 20 kept rows per shard at a 10% rate
    kept = [r["doc_id"] for s in shards for r in read_shard(s).to_pylist()]
    assert 60 < len(kept) < 140
    again = [
        r["doc_id"]
        for s in plan_shards(str(tmp_path / "in.jsonl"), 7, sample=100, seed=3)
        for r in read_shard(s).to_pylist()
    ]
    assert sorted(again) == sorted(kept)  # the sample is per row: shard size does not change it
