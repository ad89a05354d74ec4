"""The perturbation job's model stages on the same leads, for two versions of the code side by side
(``--before``: a git worktree of the older commit; after: this checkout), each measure in its own process:
REPLACE's and RANK's candidates per second, a digest of every candidate (the same bytes?) and RANK's peak
RSS on one 16,000-token block. Writes jobs/results/bench_stages.{json,md}; how: hades_ray/docs/benchmarks.md.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))

# No hades_ray import at the top: a child measures the hades_ray of the tree it runs in (``in_child``).
from jobs.bench_common import ROOT, git, in_child, machine_facts, machine_words, options, page, peak_rss_mib, versus
from jobs.bench_common import write_results

RSS_BLOCK = (80, 200)  # rows x tokens: half of one full 32k-token forward (a full one before: ~13 GB)


def stage_rates(docs: int, candidates: int) -> dict:
    """In this process: seconds per stage over the leads, and a digest."""
    import pyarrow as pa

    from hades_ray.config import load_config
    from hades_ray.io.readers import plan_shards, read_shard
    from hades_ray.perturb.stages import perturb_stages

    config = load_config("local", overrides=[f"perturb.rank.num_candidates={candidates}"])
    stages = perturb_stages(config)
    for stage in stages:
        stage.setup()
    shards = plan_shards("demo", 1000, docs, None, config.seed, lambda fn, items: [fn(i) for i in items])
    table = pa.concat_tables([read_shard(shard) for shard in shards])
    seconds = {}
    for stage in stages:
        started = time.perf_counter()
        table = stage(table)
        seconds[stage.name] = round(time.perf_counter() - started, 2)
    rows = [r for r in table.to_pylist() if r["status"] == "ok"]
    made = sum(len(r["cand_ppls"]) for r in rows)
    outputs = sorted((r["doc_id"], r["cand_texts"], r["cand_ppls"]) for r in rows)
    busy = {"replace": seconds["replace"], "rank": seconds["rank"]}
    busy["replace_and_rank"] = seconds["replace"] + seconds["rank"]
    return {
        "leads": table.num_rows,
        "kept": len(rows),
        "candidates": made,
        "stage_seconds": seconds,
        "candidates_per_s": {stage: round(made / s, 3) for stage, s in busy.items()},
        "output_digest": hashlib.sha256(json.dumps(outputs).encode()).hexdigest(),
        "texts_digest": hashlib.sha256(json.dumps([(d, texts) for d, texts, _ in outputs]).encode()).hexdigest(),
        "perplexities": {d: ppls for d, _, ppls in outputs},
    }


def rank_rss() -> dict:
    """In this process: RANK's ``perplexities`` on one full block; the process's peak RSS before and after."""
    import numpy as np
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from hades_ray.perturb.rank import perplexities

    torch.set_num_threads(1)
    torch.manual_seed(0)
    lm = GPT2LMHeadModel(GPT2Config(vocab_size=50257, n_embd=128, n_layer=2, n_head=4, n_positions=256)).eval()
    rows, length = RSS_BLOCK
    rng = np.random.default_rng(0)
    ids = [[int(t) for t in rng.integers(5, 50257, size=length)] for _ in range(rows)]
    perplexities(lm, ids[:2], 0)  # warm-up: the model's own memory is counted in "before"
    before = peak_rss_mib()
    started = time.perf_counter()
    scores = perplexities(lm, ids, 0)
    return {
        "block_tokens": rows * length,
        "peak_rss_mib": round(peak_rss_mib()),
        "before_block_mib": round(before),
        "seconds": round(time.perf_counter() - started, 2),
        "ppl_digest": hashlib.sha256(json.dumps(scores).encode()).hexdigest(),
    }


def markdown(results: dict) -> str:
    """A before -> after table of the two versions' figures."""
    from hades_ray.markdown import pipe_table
    from hades_ray.perturb.rank import perplexity_change

    b, a = results["before"], results["after"]
    rates = [(b["stages"]["candidates_per_s"][s], a["stages"]["candidates_per_s"][s]) for s in STAGES]
    rows = [versus(f"{stage} candidates/s", *rate, ".2f") for stage, rate in zip(STAGES, rates)]
    block = f"{a['rank_rss']['block_tokens']:,}-token block"
    rows.append(
        versus(f"RANK peak RSS, one {block}, MiB", b["rank_rss"]["peak_rss_mib"], a["rank_rss"]["peak_rss_mib"], ",")
    )
    rows.append(versus("RANK seconds, the same block", b["rank_rss"]["seconds"], a["rank_rss"]["seconds"], ","))
    same = {key: b[part][key] == a[part][key] for part, key in SAME}
    change = perplexity_change(b["stages"]["perplexities"], a["stages"]["perplexities"])
    same_best = change["documents"] - len(change["kept_candidate_differs"])
    return page(
        "# REPLACE and RANK before -> after (candidates per second, higher is better)",
        f"Command: `{results['command']}` (one torch thread; machine: {machine_words(results)})",
        f"{a['stages']['leads']} demo leads, {a['stages']['kept']} kept, {a['stages']['candidates']} candidates "
        f"({results['candidates_per_doc']} per lead); before = {b['commit']}, after = {a['commit']}",
        pipe_table(["measure", "before", "after", "after / before"], rows),
        f"- candidates' texts and perplexities {'byte-identical' if same['output_digest'] else 'DIFFERENT'} before "
        f"and after (texts {'identical' if same['texts_digest'] else 'DIFFERENT'}; perplexities at most "
        f"{change['max_relative_difference']:.1e} apart, relative; the most fluent candidate the same for "
        f"{same_best} of {change['documents']} leads); "
        f"the RSS block's perplexities {'identical' if same['ppl_digest'] else 'DIFFERENT'}\n"
        f"- stage seconds before {b['stages']['stage_seconds']}, after {a['stages']['stage_seconds']}",
    )


STAGES = ("replace", "rank", "replace_and_rank")
SAME = (("stages", "output_digest"), ("stages", "texts_digest"), ("rank_rss", "ppl_digest"))
FLAGS = {
    "--before": (None, "a git worktree of the code to compare against (required)", {"required": True}),
    "--docs": (200, "demo leads read"),
    "--candidates": (4, "per lead (the job's default is 20)"),
}


def main() -> int:
    args = options(__doc__, FLAGS)
    results = {"docs": args.docs, "candidates_per_doc": args.candidates}
    sizes = f"--docs {args.docs} --candidates {args.candidates}"
    results["command"] = f"python jobs/bench_stages.py --before {args.before} {sizes}"
    results["machine"] = machine_facts() | {"torch_threads": 1}
    for name, code in (("before", args.before), ("after", str(ROOT))):
        results[name] = {"commit": git("rev-parse", "--short", "HEAD", root=code) or "unknown", "code": code}
        results[name]["stages"] = in_child(stage_rates, args.docs, args.candidates, code=code)
        results[name]["rank_rss"] = in_child(rank_rss, code=code)
        print(name, json.dumps(results[name]), flush=True)
    write_results("bench_stages", results, markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
