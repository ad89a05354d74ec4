"""jobs/bench_plan.py's figures and page: the plans of the paper's pool and of Wiki-40B-en from ``hades-ray
plan`` runs (paper-sized models and the offline kit), RANK's shared prefix and the rounds' screening before
and after, and what the aim (5 H200-hours for a 1M-segment pool) asks of one H200."""

from __future__ import annotations

from hades_ray.markdown import cell, pipe_table, spec_table
from hades_ray.plan.budget import corpus_plans, flops_per_token
from hades_ray.plan.machine import describe_machine

PAPER_POOL = 1_000_000  # segments the paper perturbs
WIKI40B_EN_TRAIN = 2_900_000  # Wiki-40B-en training articles, about 2.9M (issue 11)
H200_AIM_HOURS = 5.0
H200_BF16_DENSE_TFLOPS = 989  # NVIDIA's H200 SXM datasheet figure (dense, no sparsity)


def _kept(run: dict) -> float:
    return run["sample"]["perturbed"] / run["sample"]["read"]


def _share(run: dict) -> str:
    return f"{run['sample']['perturbed']}/{run['sample']['read']} = {_kept(run):.1%}"


def corpus_plans_of(paper: dict, demo: dict, runs: dict) -> dict:
    """Each of ``runs``' (name -> a ``plan`` run's result) plans for the paper's pool and Wiki-40B-en, its
    leads kept at the shares of the enwiki sample (``paper``: an upper bound) and of the demo corpus (a lower)."""
    shares = {
        f"the enwiki sample ({_share(paper)}; pre-filtered to 5+ regex sentences: an upper bound)": _kept(paper),
        f"the demo corpus ({_share(demo)}; unfiltered Wikipedia summaries: a lower bound)": _kept(demo),
    }
    corpus = ("Wiki-40B-en, 2.9M leads", WIKI40B_EN_TRAIN)
    return {
        name: corpus_plans(run["sample"], run["throughput"], PAPER_POOL, corpus, shares, H200_AIM_HOURS)
        for name, run in runs.items()
    }


PAIRS = (("paper_sized", "paper-sized"), ("kit", "offline kit"))
PER_DOC = lambda key, f=",.0f": lambda s: f"{s[key] / max(s['perturbed'], 1):{f}}"  # noqa: E731
THROUGHPUT = {"models": cell("model"), "stage": cell("stage"), "dtype": cell("dtype")}
THROUGHPUT |= {"tokens per CPU-second": cell("tokens_per_cpu_s", ",.0f")}
THROUGHPUT |= {"tokens per wall-second": cell("tokens_per_wall_s", ",.0f")}
THROUGHPUT |= {"token-forwards timed": cell("token_forwards", ","), "forward calls": cell("forward_calls")}
THROUGHPUT |= {"wall s": cell("wall_seconds", ".1f"), "CPU s": cell("cpu_seconds", ".1f")}
THROUGHPUT |= {"peak RSS (MiB)": cell("process_peak_rss_mib", ",.0f")}
SAMPLE = {"sample (settings)": cell("label"), "read": cell("read")}
SAMPLE |= {"perturbed": lambda s: f"{s['perturbed']} ({s['perturbed'] / s['read']:.1%})"}
SAMPLE |= {"filtered out": lambda s: ", ".join(f"{k} {v}" for k, v in s["filtered"].items()) or "none"}
SAMPLE |= {"spaCy words / read doc": lambda s: f"{s['spacy_words'] / s['read']:.0f}"}
SAMPLE |= {
    "MLM token-forwards / doc (ideal = done)": lambda s: (
        PER_DOC("mlm_token_forwards_done")(s)
        + (" (=)" if s["mlm_token_forwards_ideal"] == s["mlm_token_forwards_done"] else " (!=)")
    )
}
SAMPLE |= {"MLM calls / doc": PER_DOC("mlm_forward_calls", ".1f")}
SAMPLE |= {"tokens per MLM call": lambda s: f"{s['mlm_token_forwards_done'] / max(s['mlm_forward_calls'], 1):,.0f}"}
SAMPLE |= {"GPT-2 tokens / doc": PER_DOC("lm_tokens"), "GPT-2 calls / doc": PER_DOC("lm_forward_calls", ".2f")}
PLAN = {"throughput": lambda p: p["label"], "corpus": lambda p: p["corpus"]}
PLAN |= {"read": cell("documents_read", ","), "perturbed": cell("documents_perturbed", ",")}
PLAN |= {"candidates": cell("candidates", ","), "REPLACE core-h": cell("replace_device_hours", ",.0f")}
PLAN |= {"RANK core-h": cell("rank_device_hours", ",.0f"), "total core-h": cell("device_hours", ",.0f")}
PLAN |= {
    "REPLACE:RANK actors per 4 cores": lambda p: (
        f"{p['balance']['replace_actors_per_device']}:{p['balance']['rank_actors_per_device']}"
    )
}
PLAN |= {"MASK core-h": cell("prepare_cpu_core_hours", ",.1f")}
BATCH = {"REPLACE batch (documents)": cell("replace_batch_size")}
BATCH |= {"MLM token-forwards": cell("mlm_token_forwards", ","), "forward calls": cell("mlm_forward_calls", ",")}
BATCH |= {"rows per forward": cell("rows_per_forward"), "tokens per forward": cell("tokens_per_forward", ",")}


def before_after(results: dict) -> list[list]:
    """RANK for the 1M-segment pool without and with the shared prefix, and the rounds' screening of a 1M pool
    without reuse and with the store: (work, throughput, before, after, after / before) rows."""
    rows = []
    for key, label in PAIRS:
        r = results["plans"][f"{key}_cpu_core"][0]["rank_shared_prefix"]
        work = f"RANK, 1M segments x 20 candidates, core-h ({r['prefix_tokens_per_document']:,.0f} prefix tokens/doc)"
        rows.append([work, label, f"{r['without']['device_hours']:,.1f}", f"{r['with']['device_hours']:,.1f}"])
        rows.append(["RANK GPT-2 token-forwards", label, f"{r['without']['lm_token_forwards']:,}"])
        rows[-1] += [f"{r['with']['lm_token_forwards']:,}"]
        rows[-2].append(f"{r['ratio']:.2f}x"), rows[-1].append(f"{r['ratio']:.2f}x")
    for key, label in (("paper_sized", "bert-base-sized"), ("kit", "offline kit MiniLM")):
        s = results["runs"][key]["screening"]
        b, a = s["without_reuse"], s["with_store"]
        work = f"screening, {s['rounds']} rounds over a {s['pool_instances']:,} pool: backbone forwards"
        ratio = a["backbone_forwards"] / b["backbone_forwards"]
        rows.append([work, label, f"{b['backbone_forwards']:,}", f"{a['backbone_forwards']:,}", f"{ratio:.3f}x"])
        rows.append(["screening core-h (head passes included)", label, f"{b['device_hours']:,.1f}"])
        rows[-1] += [f"{a['device_hours']:,.1f}", f"{s['ratio']:.3f}x"]
    return rows


def aim_lines(results: dict) -> tuple[str, ...]:
    pool = results["plans"]["paper_sized_cpu_core"][0]
    fit, work, speed = pool["to_fit"], pool["work"], results["runs"]["paper_sized"]["throughput"]
    s = results["runs"]["paper_sized"]["sample"]
    mlm = work["mlm_token_forwards"] * flops_per_token(12, 768, s["mlm_token_forwards_ideal"] / s["mlm_steps"])
    lm = work["lm_token_forwards"] * flops_per_token(12, 768, s["lm_tokens"] / s["candidates"], head=50257)
    at_peak = (mlm + lm) / (H200_BF16_DENSE_TFLOPS * 1e12) / 3600
    steps, length = s["mlm_steps"] / s["candidates"], s["mlm_token_forwards_ideal"] / s["mlm_steps"]
    gpu = results["machine"].get("gpu") or {}
    return (
        f"The paper's pool (1M segments x 20 candidates) is {work['mlm_token_forwards']:,} MLM token-forwards in "
        f"{work['mlm_forward_calls']:,} forwards and {work['lm_token_forwards']:,} GPT-2 token-forwards in "
        f"{work['lm_forward_calls']:,} forwards; REPLACE is {pool['balance']['replace_share_of_work']:.0%} of the "
        f"model time. To fit {fit['device_hours']:g} H200-hours one H200 must sustain {fit['mlm_tokens_per_s']:,} "
        f"MLM tokens/s and {fit['lm_tokens_per_s']:,} GPT-2 tokens/s: "
        f"{fit['mlm_tokens_per_s'] / speed['mlm_tokens_per_s']:,.0f}x and "
        f"{fit['lm_tokens_per_s'] / speed['lm_tokens_per_s']:,.0f}x one CPU core here ("
        + (f"GPU present: {gpu.get('name', 'yes')}" if gpu.get("present") else "no GPU on the machine")
        + ": CPU figures).",
        f"Arithmetic, not a measurement: at bert-base's and gpt2's sizes the pool is {mlm / 1e18:.2f} EFLOP in "
        f"REPLACE and {lm / 1e18:.2f} EFLOP in RANK, {at_peak:.1f} hours at an H200's {H200_BF16_DENSE_TFLOPS} "
        f"dense bf16 TFLOP/s; {H200_AIM_HOURS:g} H200-hours needs {at_peak / H200_AIM_HOURS:.0%} of that peak.",
        f"REPLACE's levers (not measured): a candidate takes {steps:.1f} steps (one per masked token), each over "
        f"the whole lead ({length:.0f} tokens), so 20 x {steps:.1f} x {length:.0f} token-forwards a document: a "
        "window around the masked spans, fewer candidates, larger batches (below), bf16 on a GPU. RANK's float32 "
        "logits over 50,257 tokens set its peak memory (about 6.6 GB for a 32,768-token chunk).",
    )


def benchmark_page(results: dict) -> str:
    """jobs/bench_plan.py's results page from its results (``runs``, ``plans``, ``replace_batch_size``, ...)."""
    m, runs = results["machine"], results["runs"]
    measured = [
        runs[k]["measured"][stage] | {"stage": stage.upper()} for k, _ in PAIRS for stage in ("replace", "rank")
    ]
    ratio = {
        s: runs["kit"]["measured"][s]["tokens_per_s"] / runs["paper_sized"]["measured"][s]["tokens_per_s"]
        for s in ("replace", "rank")
    }
    names = {"paper_sized": "enwiki, paper settings, context 1024", "kit": "enwiki, paper settings, kit context 256"}
    names["demo_counts"] = "demo corpus, paper settings, context 1024"
    plans = [p | {"label": label} for key, label in PAIRS for p in results["plans"][f"{key}_cpu_core"]]
    machine = (
        f"Machine at the start: {describe_machine(m)}. Load average at the end: {m['load_average_at_end'][0]:.1f}. "
        f"Native bf16: {m['cpu_bf16_native']}. One actor with one torch thread: hours are CPU core-hours."
    )
    commands = [f"- `{run['command']}` ({run['wall_s']} s)" for run in runs.values()]
    blocks = (
        "# Capacity planner benchmark (hades-ray plan), CPU only",
        machine,
        "## Throughput per CPU core (REPLACE: `fill_masks`; RANK: `perplexities`)",
        spec_table(THROUGHPUT, measured),
        f"The kit is {ratio['replace']:.1f}x faster per token in REPLACE and {ratio['rank']:.1f}x in RANK than the "
        "paper-sized models; the RANK row's peak RSS includes REPLACE's model.",
        "## The samples' counts (MASK ran, the models did not)",
        spec_table(SAMPLE, [runs[k]["sample"] | {"label": label} for k, label in names.items()]),
        "enwiki's leads are pre-filtered (5+ regex sentences): its pass share is an upper bound; the demo "
        "corpus's, a lower one. Counts use the kit's tokenizers.",
        "## Plans (CPU core-hours; wall time is hours / cores)",
        spec_table(PLAN, plans),
        "## Before / after (issue 35): RANK's shared prefix, and the rounds' screening with the store",
        pipe_table(["work", "throughput", "before", "after", "after / before"], before_after(results)),
        "RANK's after counts each document's shared prefix once (`jobs/results/bench_rank.md` measures it); "
        "with the store each round runs only the MLP head over stored span representations.",
        "## The aim: at most 5 H200-hours for a 1M-segment pool",
        *aim_lines(results),
        f"REPLACE's batches on one shard of the first {results['replace_batch_size'][-1]['replace_batch_size']} "
        "enwiki rows (sequences of one length share a forward; the work does not change):",
        spec_table(BATCH, results["replace_batch_size"]),
        "## Commands",
        [*commands, f"- whole benchmark: `python jobs/bench_plan.py` ({results['wall_s']} s)"],
    )
    return "\n\n".join(b if isinstance(b, str) else "\n".join(b) for b in blocks) + "\n"
