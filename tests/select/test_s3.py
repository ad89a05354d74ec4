"""Selection on a pool that lives on an object store (a local S3-compatible server, moto, on 127.0.0.1)."""

import json

import pytest

from hades_ray.config import load_config
from hades_ray.pipeline import storage
from hades_ray.pipeline.executor import Executor
from tests.select.fake_pool import build_pool

pytest.importorskip("moto")


def test_round_reads_a_pool_on_s3(micro_home, s3, tmp_path):
    from hades_ray.select.round import run_round

    local = build_pool(tmp_path / "pool", n_docs=6, docs_per_shard=4, unfinished=True)
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        storage.write(f"s3://hades/selpool/{path.relative_to(local)}", path.read_bytes())
    workdir = tmp_path / "wd"
    summary = run_round(
        load_config(overrides=["select.round_sizes=[10]"]),
        workdir,
        0,
        pool="s3://hades/selpool",
        executor=Executor("local"),
    )
    assert summary["counts"]["pool"] == 72 and summary["counts"]["batch"] == 10  # the unmarked shard is ignored
    assert json.loads((workdir / "workdir.json").read_text())["pool"] == "s3://hades/selpool"
    batch = [json.loads(x) for x in (workdir / "round-000" / "batch.jsonl").read_text().splitlines()]
    assert all(item["id"].startswith("d") and int(item["doc_id"][1:]) < 6 for item in batch)
