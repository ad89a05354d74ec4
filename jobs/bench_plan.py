"""Capacity-planner benchmark: REPLACE/RANK throughput of paper-sized random-weight models and of the
offline kit on this machine's CPU, and the plans they give for the paper's pool and for Wiki-40B-en.

  python jobs/bench_plan.py [--sample 300] [--demo-sample 500] [--measure-seconds 3]

Every figure comes from a ``hades-ray plan`` run (the exact commands are written beside the figures):
1. paper-sized: the paper preset's REPLACE/RANK settings (20 candidates, unconstrained fill), the
   offline kit's tokenizers (no hub download), RANK's context 1024 as GPT-2's, throughput of
   bert-base- and gpt2-sized random-weight models; the 14 rounds' screening of a 1M pool with a
   bert-base-sized round detector;
2. kit: the same sample and settings with the offline kit's own models (RANK context 256, theirs;
   the rounds screened by the kit's MiniLM);
RANK and the screening appear before and after (the shared prefix; the span-representation store).
3. the embedded demo corpus, counted only, for its share passing the 5-sentence filter.
Writes jobs/results/bench_plan.json and .md; about 3-5 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.pipeline import storage
from hades_ray.markdown import pipe_table
from hades_ray.pipeline.laps import Laps
from jobs.bench_common import ENWIKI, ROOT, offline_env, write_results

PAPER_POOL = 1_000_000  # segments the paper perturbs
WIKI40B_EN_TRAIN = 2_900_000  # Wiki-40B-en training articles, about 2.9M (issue 11)
KIT = ["--set", "models.mlm=local:mlm", "--set", "models.causal_lm=local:gpt2"]
H200_AIM_HOURS = 5.0
H200_BF16_DENSE_TFLOPS = 989  # NVIDIA's H200 SXM datasheet figure (dense, no sparsity)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=300, help="enwiki rows counted and replayed (seeded sample)")
    parser.add_argument("--demo-sample", type=int, default=500, help="demo-corpus rows counted (seeded sample)")
    parser.add_argument("--measure-seconds", type=float, default=6.0, help="time budget per model stage")
    parser.add_argument(
        "--shard-rows", type=int, default=400, help="enwiki rows of the shard where REPLACE batch sizes are compared"
    )
    return parser.parse_args(argv)


def plan_run(args: list[str], out: Path) -> dict:
    """One ``hades-ray plan`` run in its own process (so its peak memory is its own); the result JSON."""
    command = [sys.executable, "-m", "hades_ray", "plan", *args, "--output", str(out)]
    laps = Laps()
    subprocess.run(command, check=True, cwd=ROOT, env=offline_env(), stdout=subprocess.DEVNULL, timeout=900)
    result = json.loads(out.read_text(encoding="utf-8"))
    shown = ["hades-ray", "plan", *(a if not a.startswith(str(ROOT.parent)) else _short(a) for a in args)]
    result["command"] = " ".join(shown)
    result["wall_s"] = round(laps.lap(), 1)
    return result


def _short(path: str) -> str:
    return os.path.relpath(path, ROOT)


def run_all(args, tmp: Path) -> dict:
    from hades_ray.plan.budget import corpus_plans
    from hades_ray.plan.machine import machine_facts

    machine = machine_facts()  # before the runs: the load they start under
    enwiki = str(ENWIKI)
    common = ["--preset", "paper", *KIT, "--perturbed-docs", str(PAPER_POOL), "--measure-seconds"]
    common += [str(args.measure_seconds)]
    # The paper preset's 14 rounds over a 1M pool (select.schedule), screened by the round detector's
    # backbone: bert-base-sized for the paper, the kit's MiniLM for the kit (bert-base-cased is a hub model).
    rounds = ["--pool-instances", str(PAPER_POOL), "--rounds", "14"]
    paper = plan_run(
        ["--input", enwiki, "--sample", str(args.sample), *common, "--lm-context", "1024", "--measure", "paper-sized"]
        + rounds,
        tmp / "paper.json",
    )
    kit_rounds = [*rounds, "--set", "select.detector_backbone=local:minilm"]
    kit = plan_run(
        ["--input", enwiki, "--sample", str(args.sample), *common, "--measure", *kit_rounds], tmp / "kit.json"
    )
    speed = paper["throughput"]
    given = ["--mlm-tokens-per-s", str(speed["mlm_tokens_per_s"]), "--lm-tokens-per-s", str(speed["lm_tokens_per_s"])]
    demo = plan_run(
        ["--input", "demo", "--sample", str(args.demo_sample), "--preset", "paper", *KIT, "--lm-context", "1024"]
        + ["--corpus-docs", str(WIKI40B_EN_TRAIN), *given],
        tmp / "demo.json",
    )
    shares = {
        f"the enwiki sample ({_share(paper)}; pre-filtered to 5+ regex sentences: an upper bound)": _kept(paper),
        f"the demo corpus ({_share(demo)}; unfiltered Wikipedia summaries: a lower bound)": _kept(demo),
    }

    def plans_for(run: dict) -> list[dict]:
        corpus = ("Wiki-40B-en, 2.9M leads", WIKI40B_EN_TRAIN)
        return corpus_plans(run["sample"], run["throughput"], PAPER_POOL, corpus, shares, H200_AIM_HOURS)

    return {
        "machine": machine,
        "runs": {"paper_sized": paper, "kit": kit, "demo_counts": demo},
        "replace_batch_size": batch_size_lever(args.shard_rows, [32, 128, args.shard_rows]),
        "plans": {
            "paper_sized_cpu_core": plans_for(paper),
            "kit_cpu_core": plans_for(kit),
        },
    }


def batch_size_lever(limit: int, sizes: list[int]) -> list[dict]:
    """REPLACE's forwards as its batch grows (``batch_size_counts``), on one shard of ``limit`` enwiki rows."""
    from hades_ray.config import load_config
    from hades_ray.plan.count import batch_size_counts, load_tokenizers

    overrides = [item for item in KIT if item != "--set"] + [f"perturb.read.shard_size={limit}"]
    config = load_config("paper", overrides=overrides)
    return batch_size_counts(config, str(ENWIKI), load_tokenizers(config, lm_context=1024), limit, sizes)


def _kept(run: dict) -> float:
    return run["sample"]["perturbed"] / run["sample"]["read"]


def _share(run: dict) -> str:
    return f"{run['sample']['perturbed']}/{run['sample']['read']} = {_kept(run):.1%}"


def main(argv=None) -> int:
    args = parse_args(argv)
    if not ENWIKI.is_file():
        print(f"bench_plan: {ENWIKI} is absent; this benchmark needs the shared enwiki sample", file=sys.stderr)
        return 2
    laps = Laps()
    with storage.scratch_folder("bench_plan_") as tmp:
        results = run_all(args, Path(tmp))
    results["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    results["wall_s"] = round(laps.lap(), 1)
    write_results("bench_plan", results, markdown(results))
    return 0


def _throughput_rows(results: dict) -> list[str]:
    columns = ["models", "stage", "dtype", "tokens per CPU-second", "tokens per wall-second"]
    columns += ["token-forwards timed", "forward calls", "wall s", "CPU s", "peak RSS (MiB)"]
    rows = []
    for key in ("paper_sized", "kit"):
        for stage, m in ((stage, results["runs"][key]["measured"][stage]) for stage in ("replace", "rank")):
            rows.append([m["model"], stage.upper(), m["dtype"], f"{m['tokens_per_cpu_s']:,.0f}"])
            rows[-1] += [f"{m['tokens_per_wall_s']:,.0f}", f"{m['token_forwards']:,}", m["forward_calls"]]
            rows[-1] += [f"{m['wall_seconds']:.1f}", f"{m['cpu_seconds']:.1f}", f"{m['process_peak_rss_mib']:,.0f}"]
    paper, kit = results["runs"]["paper_sized"]["measured"], results["runs"]["kit"]["measured"]
    ratios = {s: kit[s]["tokens_per_s"] / paper[s]["tokens_per_s"] for s in ("replace", "rank")}
    return [
        *pipe_table(columns, rows),
        "",
        f"Plans use tokens per CPU-second (one core's own speed, whatever the neighbours do). "
        f"The offline kit is {ratios['replace']:.1f}x faster per token in REPLACE and {ratios['rank']:.1f}x in "
        "RANK than the paper-sized models (peak RSS is the process's peak so far: the RANK row includes "
        "REPLACE's model).",
    ]


def _sample_rows(results: dict) -> list[str]:
    columns = ["sample (settings)", "read", "perturbed", "filtered out", "spaCy words / read doc"]
    columns += ["MLM token-forwards / doc (ideal = done)", "MLM calls / doc", "tokens per MLM call"]
    columns += ["GPT-2 tokens / doc", "GPT-2 calls / doc"]
    names = {"paper_sized": "enwiki, paper settings, context 1024", "kit": "enwiki, paper settings, kit context 256"}
    names["demo_counts"] = "demo corpus, paper settings, context 1024"
    rows = []
    for key, label in names.items():
        s = results["runs"][key]["sample"]
        n = max(s["perturbed"], 1)
        per_call = s["mlm_token_forwards_done"] / max(s["mlm_forward_calls"], 1)
        same = "=" if s["mlm_token_forwards_ideal"] == s["mlm_token_forwards_done"] else "!="
        filtered = ", ".join(f"{k} {v}" for k, v in s["filtered"].items()) or "none"
        rows.append([label, s["read"], f"{s['perturbed']} ({s['perturbed'] / s['read']:.1%})", filtered])
        rows[-1] += [f"{s['spacy_words'] / s['read']:.0f}", f"{s['mlm_token_forwards_done'] / n:,.0f} ({same})"]
        rows[-1] += [f"{s['mlm_forward_calls'] / n:.1f}", f"{per_call:,.0f}", f"{s['lm_tokens'] / n:,.0f}"]
        rows[-1].append(f"{s['lm_forward_calls'] / n:.2f}")
    return pipe_table(columns, rows)


def _plan_rows(results: dict) -> list[str]:
    columns = ["throughput", "corpus", "read", "perturbed", "candidates", "REPLACE core-h", "RANK core-h"]
    columns += ["total core-h", "REPLACE:RANK actors per 4 cores", "MASK core-h"]
    rows = []
    for key, label in (("paper_sized_cpu_core", "paper-sized"), ("kit_cpu_core", "offline kit")):
        for p in results["plans"][key]:
            b = p["balance"]
            rows.append([label, p["corpus"], f"{p['documents_read']:,}", f"{p['documents_perturbed']:,}"])
            rows[-1] += [f"{p['candidates']:,}", f"{p['replace_device_hours']:,.0f}", f"{p['rank_device_hours']:,.0f}"]
            rows[-1] += [f"{p['device_hours']:,.0f}", f"{b['replace_actors_per_device']}:{b['rank_actors_per_device']}"]
            rows[-1].append(f"{p['prepare_cpu_core_hours']:,.1f}")
    return pipe_table(columns, rows)


def _before_after_rows(results: dict) -> list[str]:
    """RANK for the 1M-segment pool without and with the shared prefix (``perturb.rank.share_prefix``),
    and the paper's 14 rounds' screening of a 1M pool without reuse and with the store
    (``detect.reuse_frozen``), side by side, CPU core-hours at each run's measured throughput."""
    columns = ["work", "throughput", "before", "after", "after / before"]
    rows = []
    for plans, label in (("paper_sized_cpu_core", "paper-sized"), ("kit_cpu_core", "offline kit")):
        r = results["plans"][plans][0]["rank_shared_prefix"]
        rows.append(
            [
                f"RANK, 1M segments x 20 candidates, core-h ({r['prefix_tokens_per_document']:,.0f} prefix tokens/doc)",
                label,
                f"{r['without']['device_hours']:,.1f}",
                f"{r['with']['device_hours']:,.1f}",
                f"{r['ratio']:.2f}x",
            ]
        )
        rows.append(
            [
                "RANK GPT-2 token-forwards",
                label,
                f"{r['without']['lm_token_forwards']:,}",
                f"{r['with']['lm_token_forwards']:,}",
                f"{r['ratio']:.2f}x",
            ]
        )
    for key, label in (("paper_sized", "bert-base-sized"), ("kit", "offline kit MiniLM")):
        s = results["runs"][key]["screening"]
        before, after = s["without_reuse"], s["with_store"]
        rows.append(
            [
                f"screening, {s['rounds']} rounds over a {s['pool_instances']:,} pool: backbone forwards",
                label,
                f"{before['backbone_forwards']:,}",
                f"{after['backbone_forwards']:,}",
                f"{after['backbone_forwards'] / before['backbone_forwards']:.3f}x",
            ]
        )
        rows.append(
            [
                "screening core-h (head passes included)",
                label,
                f"{before['device_hours']:,.1f}",
                f"{after['device_hours']:,.1f}",
                f"{s['ratio']:.3f}x",
            ]
        )
    return [
        *pipe_table(columns, rows),
        "",
        "RANK's after counts each document's shared prefix (the tokens before the first span MASK chose in "
        "any candidate) once instead of once per candidate, at the same tokens per second; "
        "`jobs/results/bench_rank.md` measures the busy seconds of both on the demo's leads. The screening "
        "rows: without reuse every round runs the round detector (backbone and head) over every unjudged pool "
        "instance; with the store the pool's span representations are made once and each round runs only "
        "the MLP head (its throughput measured on stored-size representations); reading the store is not counted.",
    ]


def _aim_lines(results: dict) -> list[str]:
    pool = results["plans"]["paper_sized_cpu_core"][0]
    fit, work, speed = pool["to_fit"], pool["work"], results["runs"]["paper_sized"]["throughput"]
    share = pool["balance"]["replace_share_of_work"]
    return [
        f"The paper's pool (1M segments x 20 candidates) is {work['mlm_token_forwards']:,} MLM token-forwards in "
        f"{work['mlm_forward_calls']:,} forwards and {work['lm_token_forwards']:,} GPT-2 token-forwards in "
        f"{work['lm_forward_calls']:,} forwards. REPLACE dominates ({share:.0%} of the model time at the "
        "paper-sized CPU speeds).",
        f"To fit {fit['device_hours']:g} H200-hours, one H200 must sustain {fit['mlm_tokens_per_s']:,} MLM tokens/s "
        f"in REPLACE and {fit['lm_tokens_per_s']:,} GPT-2 tokens/s in RANK (with these shares of the time): "
        f"{fit['mlm_tokens_per_s'] / speed['mlm_tokens_per_s']:,.0f}x and "
        f"{fit['lm_tokens_per_s'] / speed['lm_tokens_per_s']:,.0f}x one CPU core's paper-sized figures here. "
        f"Not measured on a GPU ({_gpu_words(results['machine'])}): these are CPU figures.",
        "",
        *_flops_lines(results),
        "",
        *_levers(results),
    ]


def _flops_lines(results: dict) -> list[str]:
    from hades_ray.plan.budget import flops_per_token

    s, work = results["runs"]["paper_sized"]["sample"], results["plans"]["paper_sized_cpu_core"][0]["work"]
    mlm_context = s["mlm_token_forwards_ideal"] / s["mlm_steps"]
    lm_context = s["lm_tokens"] / s["candidates"]
    mlm = work["mlm_token_forwards"] * flops_per_token(12, 768, mlm_context)
    lm = work["lm_token_forwards"] * flops_per_token(12, 768, lm_context, head=50257)
    at_peak = (mlm + lm) / (H200_BF16_DENSE_TFLOPS * 1e12) / 3600
    return [
        f"Arithmetic, not a measurement: at bert-base's and gpt2's sizes the pool is {mlm / 1e18:.2f} EFLOP in "
        f"REPLACE and {lm / 1e18:.2f} EFLOP in RANK, {at_peak:.1f} hours at an H200's {H200_BF16_DENSE_TFLOPS} "
        f"dense bf16 TFLOP/s; {H200_AIM_HOURS:g} H200-hours needs {at_peak / H200_AIM_HOURS:.0%} of that peak "
        "sustained over the whole run, at the small forwards counted above.",
    ]


def _levers(results: dict) -> list[str]:
    s = results["runs"]["paper_sized"]["sample"]
    steps = s["mlm_steps"] / s["candidates"]
    length = s["mlm_token_forwards_ideal"] / s["mlm_steps"]
    return [
        f"What drives REPLACE: each candidate takes {steps:.1f} model steps (one per masked token, left to right) "
        f"and each step runs the whole lead, {length:.0f} tokens on average, so a document costs "
        f"20 x {steps:.1f} x {length:.0f} token-forwards. What would bring it down (not measured here): a "
        "window of the lead around the masked spans instead of all of it (the cost falls with the window); "
        "fewer candidates (both stages scale with them); a larger REPLACE batch, so more sequences of one "
        "length share a forward (the table below: same work, fewer and larger forwards, which a GPU runs "
        "closer to its peak); bf16 on the GPU (the paper preset's `dtype: auto`). RANK materialises float32 "
        "logits over GPT-2's 50,257 tokens for every position of a forward: its peak memory above comes from "
        "that, and a 32,768-token chunk (`MAX_BATCH_TOKENS`) would need about 6.6 GB for the logits alone.",
    ]


def _batch_rows(results: dict) -> list[str]:
    columns = ["REPLACE batch (documents)", "MLM token-forwards", "forward calls", "rows per forward"]
    rows = [
        [r["replace_batch_size"], f"{r['mlm_token_forwards']:,}", f"{r['mlm_forward_calls']:,}", r["rows_per_forward"]]
        + [f"{r['tokens_per_forward']:,}"]
        for r in results["replace_batch_size"]
    ]
    return pipe_table([*columns, "tokens per forward"], rows)


def _gpu_words(machine: dict) -> str:
    gpu = machine.get("gpu") or {}
    return f"GPU present: {gpu.get('name', 'yes')}" if gpu.get("present") else "no GPU on the machine"


def markdown(results: dict) -> str:
    from hades_ray.plan.machine import describe_machine

    m = results["machine"]
    lines = [
        "# Capacity planner benchmark (hades-ray plan), CPU only",
        "",
        f"Machine at the start: {describe_machine(m)}. Load average at the end: {m['load_average_at_end'][0]:.1f}. "
        f"Native bf16: {m['cpu_bf16_native']} (dtype auto runs float32 on a CPU either way). Throughput is one "
        "actor with one torch thread (one core), so hours are CPU core-hours; a high load average makes these "
        "figures low, not high.",
        "",
        "## Throughput per CPU core (REPLACE: `fill_masks` on the sample's masked sequences; RANK: `perplexities`)",
        "",
        *_throughput_rows(results),
        "",
        "## The samples' counts (the job's own batching; MASK ran, the models did not)",
        "",
        *_sample_rows(results),
        "",
        "The enwiki file holds leads already kept by a regex for 5+ sentences, so its pass share (spaCy's "
        "sentences, the job's filter) is an upper bound for raw Wikipedia; the demo corpus holds unfiltered, "
        "shorter Wikipedia summaries, a lower bound. Counts use the offline kit's tokenizers (MLM: a 30,522 "
        "WordPiece vocabulary like bert-base's; GPT-2 side: a 4,096 BPE, so more tokens per text than GPT-2's "
        "50,257) and count each RANK candidate at its original text's length.",
        "",
        "## Plans (CPU core-hours; wall time is hours / cores)",
        "",
        *_plan_rows(results),
        "",
        "## Before / after (issue 35): RANK's shared prefix, and the rounds' screening with the store",
        "",
        *_before_after_rows(results),
        "",
        "## The aim: at most 5 H200-hours for a 1M-segment pool",
        "",
        *_aim_lines(results),
        "",
        f"REPLACE's batches on one shard of the first {results['replace_batch_size'][-1]['replace_batch_size']} "
        "enwiki rows (paper settings; the job sorts a shard by length, and only sequences of one length share "
        "a forward, so a larger batch finds more equal lengths; the work itself does not change):",
        "",
        *_batch_rows(results),
        "",
        "## Commands",
        "",
        *[f"- `{run['command']}` ({run['wall_s']} s)" for run in results["runs"].values()],
        f"- whole benchmark: `python jobs/bench_plan.py` ({results['wall_s']} s)",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
