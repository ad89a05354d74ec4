"""Words/s of ``hades-ray score`` against the naive way (one forward per word, batch 1), side by side.

Causal online (the kit's GPT-2 and a GPT-2-sized backbone) and encoder offline and online (MiniLM) detectors
with random heads, each variant in a fresh process. Writes jobs/results/bench_score.{json,md}; how each
variant runs: hades_ray/docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.detect.synthetic import random_detector
from hades_ray.markdown import pipe_table
from hades_ray.pipeline import storage
from jobs.bench_common import ENWIKI, in_child, machine_facts, machine_words, options, page, peak_rss_mib, scratch
from jobs.bench_common import texts_file, write_results

WINDOW = 160  # detect.window's default


def load_texts(n: int) -> tuple[list[str], str]:
    from hades_ray.io.demo_corpus import read_demo_records
    from hades_ray.io.leads import lead_texts

    if ENWIKI.is_file():
        return lead_texts(ENWIKI, n), str(ENWIKI.name)

    return [r["text"] for r in read_demo_records()[:n]], "embedded demo corpus"


def gpt2_sized(directory: Path) -> str:
    """A GPT-2 (124M) shaped backbone with random weights and the kit's tokenizer."""
    from transformers import AutoTokenizer, GPT2Config, GPT2Model

    from hades_ray.models.registry import resolve_model

    tokenizer = AutoTokenizer.from_pretrained(resolve_model("local:gpt2"))
    storage.save_pretrained(GPT2Model(GPT2Config(vocab_size=50257)), directory)
    storage.save_pretrained(tokenizer, directory)
    return str(directory)


def naive(scorer, targets) -> int:
    """One forward per word, batch 1: the span classifier called as it is trained."""
    import torch

    from hades_ray.detect.spans import encode_spans

    words = 0
    with torch.no_grad():
        for t in targets:
            for first, last in zip(t.first, t.last):
                item = {"words": t.words, "start": first, "end": last}
                torch.softmax(scorer.model(**encode_spans(scorer.tokenizer, [item], scorer.mode, scorer.window)), -1)
                words += 1
    return words


def run_variant(detector: str, data: str, count: int, how: str, threads: int) -> dict:
    """Words/s of one way of scoring the first ``count`` texts of ``data`` (``texts_file``), in this (fresh)
    process."""
    import torch

    from hades_ray.detect.detector import Detector
    from hades_ray.score.words import find_targets
    from hades_ray.text.languages import language
    from hades_ray.text.pipeline import load_pipeline

    torch.set_num_threads(threads)
    nlp = load_pipeline("en")
    texts = [json.loads(line)["text"] for line in Path(data).read_text(encoding="utf-8").splitlines()[:count]]
    targets = [find_targets(t, "content", nlp, lang=language("en")) for t in texts]
    scorer = Detector.open(detector).scorer()
    scorer.score(targets[:1])  # warm-up
    began, cpu_began = time.perf_counter(), time.process_time()
    words = naive(scorer, targets) if how == "naive" else sum(len(p) for p in scorer.score(targets))
    seconds, cpu_seconds = time.perf_counter() - began, time.process_time() - cpu_began
    out = {"words": words, "seconds": round(seconds, 3), "cpu_seconds": round(cpu_seconds, 3)}
    # This process's CPU time (all its threads): other jobs on shared cores inflate wall time, not this.
    out |= {"words_per_s": round(words / seconds, 2), "words_per_cpu_s": round(words / cpu_seconds, 2)}
    return out | {"one_forward": scorer.one_forward, "peak_rss_mib": round(peak_rss_mib(), 1)}


FLAGS = {
    "--texts": (12, "texts scored by the fast paths"),
    "--naive-texts": (3, "texts scored one word at a time (slow)"),
    "--threads": (1, "torch threads per variant (1: CPU time then counts work, not OpenMP spin-waits on busy cores)"),
    "--skip-gpt2-sized": (False, "only the offline kit's models"),
}


def main() -> None:
    args = options(__doc__.split("\n")[0], FLAGS)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from hades_ray.models.registry import minilm_path, resolve_model

    texts, source = load_texts(args.texts)
    work = scratch("bench_score_")
    data = str(texts_file(texts, work / "texts.jsonl"))
    backbones = {"kit GPT-2 (causal)": resolve_model("local:gpt2"), "MiniLM (encoder)": str(minilm_path())}
    if not args.skip_gpt2_sized:
        backbones["GPT-2-sized, random weights (causal)"] = gpt2_sized(work / "gpt2-sized")
    rows = []
    for name, backbone in backbones.items():
        modes = ["online"] if "causal" in name else ["offline", "online"]
        for mode in modes:
            detector = random_detector(work / f"{len(rows)}", backbone, mode)
            print(f"{name}, {mode}: fast path ...", flush=True)
            fast = in_child(run_variant, detector, data, len(texts), "fast", args.threads)
            same = in_child(run_variant, detector, data, args.naive_texts, "fast", args.threads)
            print(f"{name}, {mode}: naive, batch 1 ...", flush=True)
            slow = in_child(run_variant, detector, data, args.naive_texts, "naive", args.threads)
            row = {"backbone": name, "mode": mode, "fast": fast, "fast_same_texts": same, "naive": slow}
            # Ratios on the same texts: a word's cost grows with its view, so other texts would skew them.
            row["speedup"] = round(same["words_per_s"] / slow["words_per_s"], 2)
            rows.append(row | {"speedup_cpu": round(same["words_per_cpu_s"] / slow["words_per_cpu_s"], 2)})
            print(json.dumps(rows[-1]), flush=True)
    meta = {"texts": args.texts, "naive_texts": args.naive_texts, "threads": args.threads, "source": source}
    # The machine read as the run ends: the 5- and 15-minute load averages cover it.
    report = {"meta": meta | {"window": WINDOW, "machine": machine_facts()}, "rows": rows}
    write_results("bench_score", report, markdown(report))


def markdown(report: dict) -> str:
    meta = report["meta"]
    columns = ["backbone", "mode", "path", "words/s, all texts", "words/s", "naive words/s", "speed-up"]
    columns += ["words/CPU-s", "naive", "speed-up (CPU)", "peak RSS MiB (all texts / naive)"]
    rows = []
    for r in report["rows"]:
        fast, same, naive = r["fast"], r["fast_same_texts"], r["naive"]
        path = "one forward per window" if fast["one_forward"] else "batched per-word windows"
        rows.append([r["backbone"], r["mode"], path, fast["words_per_s"], same["words_per_s"], naive["words_per_s"]])
        rows[-1] += [f"{r['speedup']}x", same["words_per_cpu_s"], naive["words_per_cpu_s"], f"{r['speedup_cpu']}x"]
        rows[-1].append(f"{fast['peak_rss_mib']} / {naive['peak_rss_mib']}")
    return page(
        "# `hades-ray score`: words/s against one forward per word (batch 1)",
        f"{meta['texts']} texts ({meta['source']}) for the first column; the first {meta['naive_texts']} of them "
        "side by side columns (fast and naive on the same texts); "
        f"content words; window {meta['window']} tokens; {meta['threads']} torch threads on {os.cpu_count()} "
        "shared cores; each variant in a fresh process. Words/CPU-s counts this process's CPU time only (the "
        "cores are shared with other jobs, which slows wall time but not that). Command: `.venv/bin/python "
        f"jobs/bench_score.py`. Machine: {machine_words(meta)}.",
        pipe_table(columns, rows, align="lll" + "r" * 8),
    )


if __name__ == "__main__":
    main()
