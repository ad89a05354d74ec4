"""The perturbation job end to end on Ray Data, on real Wikipedia leads and deliberately bad rows."""

import json

import pyarrow.parquet as pq
import pytest

from hades_ray.cli import main
from hades_ray.io.hades_format import read_instances

SMALL = ["--set", "perturb.rank.num_candidates=3", "--set", "perturb.read.shard_size=6"]
BAD_ROWS = [
    b"{broken json",
    json.dumps({"id": "html", "text": "<script>alert('x')</script> " + "The town is old. " * 6}).encode(),
    json.dumps({"id": "huge", "text": "The town is old. " * 7000}).encode(),
    json.dumps(
        {
            "id": "german",
            "text": "Der Hund ist gro\u00df. Die Katze schl\u00e4ft. Es regnet heute. "
            "Wir gehen nach Hause. Morgen kommt die Sonne.",
        }
    ).encode(),
    json.dumps({"id": "empty", "text": "   "}).encode(),
    json.dumps({"id": "missing"}).encode(),
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, shared_data):
    folder = tmp_path_factory.mktemp("input")
    lines = (shared_data / "enwiki2015_first_paragraphs.jsonl").read_text(encoding="utf-8").splitlines()[:10]
    (folder / "a_wiki.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "b_bad.jsonl").write_bytes(b"\n".join(BAD_ROWS) + b"\n")
    return folder


@pytest.fixture(scope="module")
def ray_run(ray_local, corpus, tmp_path_factory):
    output = tmp_path_factory.mktemp("ray_out")
    args = [
        "perturb",
        "--input",
        str(corpus),
        "--output",
        str(output),
        *SMALL,
        "--set",
        "perturb.resources.replace.concurrency=2",
        "--set",
        "perturb.resources.replace.batch_size=3",
    ]
    assert main(args) == 0
    return output


def _pool(output):
    rows = []
    for part in sorted((output / "pool").glob("part-*.parquet")):
        rows += pq.read_table(part).to_pylist()
    return rows


def test_outputs_are_complete_and_consistent(ray_run):
    summary = json.loads((ray_run / "summary.json").read_text())
    assert summary["read"] == 16
    assert summary["quarantined_by_reason"] == {
        "empty_text": 1,
        "html_markup": 1,
        "invalid_json": 1,
        "missing_text": 1,
        "non_english": 1,
        "too_long": 1,
    }
    assert summary["kept"] + summary["too_short"] + summary["no_maskable_words"] + summary["quarantined"] == 16
    quarantine = [json.loads(line) for line in (ray_run / "quarantine.jsonl").read_text().splitlines()]
    assert sorted(q["reason"] for q in quarantine) == sorted(summary["quarantined_by_reason"])
    pool = _pool(ray_run)
    assert len(pool) == summary["kept"] > 0
    for row in pool:
        text = row["original"]
        for span in reversed(row["spans"]):
            text = text[: span["orig_start"]] + span["replacement"] + text[span["orig_end"] :]
        assert text == row["perturbed"]
        assert len(row["candidate_ppls"]) == 3 and row["ppl"] == min(row["candidate_ppls"])
    instances = read_instances(ray_run / "instances.jsonl")
    assert len(instances) == summary["instances"] == sum(len(r["spans"]) for r in pool)
    assert len({i.extra["id"] for i in instances}) == len(instances)
    assert (ray_run / "config.resolved.yaml").is_file()


def test_output_does_not_depend_on_batching_or_actors(ray_run, corpus, tmp_path):
    args = [
        "perturb",
        "--input",
        str(corpus),
        "--output",
        str(tmp_path),
        "--executor",
        "local",
        *SMALL,
        "--set",
        "perturb.resources.replace.batch_size=1",
        "--set",
        "perturb.resources.rank.batch_size=1",
    ]
    assert main(args) == 0
    assert (tmp_path / "instances.jsonl").read_text() == (ray_run / "instances.jsonl").read_text()
    for ours, theirs in zip(_pool(tmp_path), _pool(ray_run)):
        assert ours["perturbed"] == theirs["perturbed"] and ours["spans"] == theirs["spans"]
        assert ours["ppl"] == pytest.approx(theirs["ppl"], rel=1e-4)


def test_rerun_skips_finished_shards_and_never_duplicates(corpus, tmp_path, capsys):
    args = ["perturb", "--input", str(corpus), "--output", str(tmp_path), "--executor", "local", *SMALL]
    assert main(args) == 0
    first = (tmp_path / "instances.jsonl").read_text()
    assert main(args) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["shards"] == {"total": 3, "processed_now": 0, "skipped_finished": 3}
    assert (tmp_path / "instances.jsonl").read_text() == first
    assert main([*args, "--force"]) == 0
    assert json.loads((tmp_path / "summary.json").read_text())["shards"]["processed_now"] == 3
    assert (tmp_path / "instances.jsonl").read_text() == first
    assert main([*args, "--set", "perturb.mask.ratio=0.3"]) == 2  # stale shards: an error, not a silent mix
    assert "--force" in capsys.readouterr().err
    assert (tmp_path / "instances.jsonl").read_text() == first


def test_user_errors_are_reported_before_any_work(tmp_path, capsys, micro_home):
    assert main(["perturb", "--input", str(tmp_path / "missing.jsonl"), "--output", str(tmp_path / "o")]) == 2
    assert "missing.jsonl" in capsys.readouterr().err
    assert main(["perturb", "--input", "demo", "--output", str(tmp_path / "o"), "--set", "perturb.mask.ration=1"]) == 2
    assert "perturb.mask.ration" in capsys.readouterr().err
    assert (
        main(
            [
                "perturb",
                "--input",
                "demo",
                "--output",
                str(tmp_path / "o"),
                "--executor",
                "local",
                "--set",
                f"models.mlm={tmp_path / 'no_model'}",
            ]
        )
        == 2
    )
    assert "no_model" in capsys.readouterr().err
