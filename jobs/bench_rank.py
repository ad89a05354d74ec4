"""RANK with and without the shared prefix (``perturb.rank.share_prefix``), side by side in one run, on the
first ``--docs`` demo leads (local preset, one torch thread): each side's busy seconds, tokens through the
model and peak memory, the documents whose kept candidate differs, and whether sharing gives the same bytes
with other block sizes. Writes jobs/results/bench_rank.{json,md}; how: hades_ray/docs/benchmarks.md.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.pipeline.steps import digest_of  # noqa: E402
from jobs.bench_common import ROOT, Sampler, job_command, kit_or_micro, options, page, versus, write_results  # noqa: E402


def candidates(docs: int, work: Path) -> list[dict]:
    """The kept leads' candidates (doc_id, rank_ids), made once by the job's own stages. REPLACE's
    output is kept too (the masked LM's work, most of the time, needs no causal LM)."""
    # Named by the models that made them: the kit's and the micro models' token ids are not interchangeable.
    from hades_ray.models.registry import resolve_model

    models = digest_of([str(resolve_model("local:mlm")), str(resolve_model("local:gpt2"))])
    cached, replaced = work / f"candidates-{docs}-{models}.json", work / f"replaced-{docs}-{models}.json"
    if cached.is_file():
        return json.loads(cached.read_text())
    import pyarrow as pa

    from hades_ray.config import load_config
    from hades_ray.io.readers import plan_shards, read_shard
    from hades_ray.perturb.stages import perturb_stages
    from hades_ray.pipeline import storage
    from hades_ray.pipeline.executor import run_stages

    config = load_config("local")
    stages = {stage.name: stage for stage in perturb_stages(config)}
    storage.makedirs(work)
    if replaced.is_file():
        table = pa.Table.from_pylist(json.loads(replaced.read_text()))
    else:
        shards = plan_shards("demo", 1000, docs, None, config.seed, lambda fn, items: [fn(i) for i in items])
        table = pa.concat_tables([read_shard(shard) for shard in shards])
        print(f"prepare and replace on {table.num_rows} rows ...", flush=True)
        table = run_stages(table, [stages["prepare"], stages["replace"]])
        storage.write(replaced, json.dumps(table.to_pylist()))
    kept = run_stages(table, [stages["assemble"]]).to_pylist()
    rows = [{"doc_id": r["doc_id"], "rank_ids": r["rank_ids"]} for r in kept if r["status"] == "ok"]
    storage.write(cached, json.dumps(rows))
    return rows


def blocks(rows: list[dict], size: int) -> list[list[dict]]:
    return [rows[begin : begin + size] for begin in range(0, len(rows), size)]


def measure(rows: list[dict], batch: int) -> dict:
    """RANK over every block, sharing off then on (alternately); seconds, memory and both sides' scores."""
    import torch

    from hades_ray.config import load_config
    from hades_ray.perturb.stages import perturb_stages
    from hades_ray.perturb.steps import rank_rows

    torch.set_num_threads(1)
    config = load_config("local")
    stage = next(stage for stage in perturb_stages(config) if stage.name == "rank")
    stage.setup()
    model, pad = stage.model, stage.pad_id
    sides = {"off": dataclasses.replace(config.perturb.rank, share_prefix=False), "on": config.perturb.rank}
    rank_rows([dict(rows[0], status="ok")], model, pad, sides["off"])  # warm-up: allocation and kernel selection
    figures = {side: {"cpu_s": 0.0, "wall_s": 0.0, "peak_rss_mib": 0.0} for side in sides}
    scores = {side: {} for side in sides}
    for index, block in enumerate(blocks(rows, batch)):
        order = list(sides) if index % 2 == 0 else list(sides)[::-1]
        for side in order:
            copies = [dict(row, status="ok") for row in block]
            with Sampler() as memory:
                cpu, wall = time.process_time(), time.perf_counter()
                rank_rows(copies, model, pad, sides[side])
                figures[side]["cpu_s"] += time.process_time() - cpu
                figures[side]["wall_s"] += time.perf_counter() - wall
            figures[side]["peak_rss_mib"] = max(figures[side]["peak_rss_mib"], memory.peak)
            scores[side].update({row["doc_id"]: row["cand_ppls"] for row in copies})
    from hades_ray.perturb.rank_prefix import tokens_run

    for side in sides:
        figures[side] |= {"tokens": tokens_run([row["rank_ids"] for row in rows], side == "on")}
        figures[side] = {k: round(v, 2) if isinstance(v, float) else v for k, v in figures[side].items()}
    other = {}
    for size in (3, 1):  # sharing on, another block layout: the same bytes
        for block in blocks(rows, size):
            copies = [dict(row, status="ok") for row in block]
            rank_rows(copies, model, pad, sides["on"])
            other.update({row["doc_id"]: row["cand_ppls"] for row in copies})
        if other != scores["on"]:
            break
    return {"sides": figures, "scores": scores, "same_bytes_other_blocks": other == scores["on"]}


def markdown(report: dict) -> str:
    from hades_ray.markdown import pipe_table

    off, on, c = report["sides"]["off"], report["sides"]["on"], report["comparison"]
    rows = [versus("RANK busy CPU seconds", off["cpu_s"], on["cpu_s"], ".1f")]
    rows += [versus("RANK wall seconds", off["wall_s"], on["wall_s"], ".1f")]
    rows += [versus("tokens through the model", off["tokens"], on["tokens"], ",")]
    rows += [versus("peak RSS while ranking, MiB", off["peak_rss_mib"], on["peak_rss_mib"], ",.0f")]
    return page(
        "# RANK with and without the shared prefix (lower is better)",
        f"Command: `{report['command']}` ({report['models']}; {report['dtype']}, one torch thread, "
        f"blocks of {report['batch']} documents, both sides alternately on each block)",
        f"{report['leads']} demo leads, {c['documents']} kept, {report['candidates']} candidates",
        pipe_table(["measure", "share_prefix: false", "share_prefix: true", "true / false"], rows),
        f"- kept candidate differs in **{len(c['kept_candidate_differs'])}** of {c['documents']} documents "
        f"{c['kept_candidate_differs'] or ''}; perplexities at most {c['max_relative_difference']:.2g} apart "
        f"(relative); the closest best-vs-second gap {c['smallest_best_gap_relative']:.2g} "
        f"({c['gaps_below_1e-5']} documents with a gap under 1e-5)\n"
        "- sharing on: the same bytes with blocks of 3 and of 1 document: "
        + ("yes" if report["same_bytes_other_blocks"] else "NO"),
    )


FLAGS = {
    "--docs": (200, "demo leads to read (default 200, make demo's)"),
    "--work": (str(ROOT / "out" / "bench_rank"), "where the candidates are kept"),
    "--no-write": (False, "print the page; leave jobs/results alone"),
}


def main(argv: list[str] | None = None) -> int:
    args = options(__doc__, FLAGS, argv)
    kit = kit_or_micro()
    from hades_ray.config import load_config
    from hades_ray.perturb.rank import perplexity_change

    config = load_config("local")
    rows = candidates(args.docs, Path(args.work))
    measured = measure(rows, config.perturb.resources.rank.batch_size)
    models = "offline kit" if kit else "micro random-weight models (kit not built)"
    report = {"command": job_command(), "models": models, "dtype": config.perturb.rank.dtype, "leads": args.docs}
    report |= {
        "candidates": sum(len(row["rank_ids"]) for row in rows),
        "batch": config.perturb.resources.rank.batch_size,
    }
    report |= {"sides": measured["sides"], "same_bytes_other_blocks": measured["same_bytes_other_blocks"]}
    report["comparison"] = perplexity_change(measured["scores"]["off"], measured["scores"]["on"])
    page = markdown(report)
    if args.no_write:
        print(page)
    else:
        write_results("bench_rank", report, page)
    return 0 if report["same_bytes_other_blocks"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
