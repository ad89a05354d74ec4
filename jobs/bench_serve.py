"""Throughput and latency of ``hades-ray serve`` at 1, 8 and 32 concurrent clients against ``hades-ray score``
on the same texts, with each side's peak memory and serve's p(H) against score's (hades_ray/docs/benchmarks.md
says how each runs). Without ``--detector``: an online detector on the kit's GPT-2 with a random head.
Writes jobs/results/bench_serve.{json,md}.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.loopback, jobs.bench_common

from hades_ray.detect.synthetic import random_detector
from hades_ray.markdown import pipe_table
from jobs.bench_common import ROOT, job_command, machine_facts, machine_words, offline_env, options, page, Sampler
from jobs.bench_common import score_cli, scratch, texts_file, tree_rss_mib, write_results

ENV = offline_env(PYTHONPATH=str(ROOT))
CLI = [sys.executable, "-m", "hades_ray.cli"]


def start_serve(detector: str, port: int) -> subprocess.Popen:
    command = [*CLI, "serve", "--model", detector, "--port", str(port)]
    return subprocess.Popen(command, env={**ENV, "HADES_SERVE_TOKEN": ""}, stdout=subprocess.PIPE, text=True)


def wait_ready(client, server: subprocess.Popen, limit: float = 300) -> float:
    began = time.perf_counter()
    while time.perf_counter() - began < limit:
        if server.poll() is not None:
            raise SystemExit(f"hades-ray serve exited with {server.returncode} before it was ready")
        try:
            if client.get("/healthz").status_code == 200:
                return time.perf_counter() - began
        except Exception:  # not listening yet
            pass
        time.sleep(0.5)
    raise SystemExit("hades-ray serve was not ready in time")


def run_serve(detector: str, texts: list[str], levels: list[int], expected: list[list[float]]) -> dict:
    import httpx

    from tests.loopback import free_port
    from tests.serve.running import load

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_serve(detector, port)
    # Its whole process tree (driver, GCS, raylet, Serve's controller and proxy, the replica), every 100 ms.
    with Sampler(lambda: tree_rss_mib(server.pid), every=0.1) as peak:
        try:
            with httpx.Client(base_url=url, timeout=30) as client:
                ready = wait_ready(client, server)
            load(url, texts[:8], 4)  # warm-up: the replica's first forwards
            rows = []
            for clients in levels:
                figures, _, answers = load(url, texts, clients)
                figures["same_p_as_score"] = [answers.get(k) for k in range(len(texts))] == expected
                rows.append(figures)
                print(json.dumps(figures), flush=True)
        finally:
            server.send_signal(signal.SIGTERM)
            code = server.wait(timeout=120)
    return {"ready_seconds": round(ready, 1), "levels": rows, "peak_rss_mib": round(peak.peak, 1), "sigterm_exit": code}


FLAGS = {
    "--texts": (200, "demo leads to score"),
    "--clients": ([1, 8, 32], "concurrency levels"),
    "--detector": (None, "a detector folder (default: kit GPT-2, random head)"),
}


def main(argv=None) -> None:
    args = options(__doc__.split("\n")[0], FLAGS, argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from hades_ray.io.demo_corpus import read_demo_records
    from hades_ray.models.registry import resolve_model

    work = scratch("bench_serve_")
    texts = [r["text"] for r in read_demo_records()[: args.texts]]
    data = texts_file(texts, work / "texts.jsonl")
    detector = args.detector or random_detector(work / "detector", resolve_model("local:gpt2"), "online")
    print("score ...", flush=True)
    score = score_cli(detector, data, work / "score")
    print(json.dumps(score), flush=True)
    scored = [json.loads(line) for line in (work / "score" / "scores.jsonl").read_text().splitlines()]
    expected = [[w["p"] for w in r["words"]] for r in scored]
    print("serve ...", flush=True)
    served = run_serve(detector, texts, args.clients, expected)
    meta = {"detector": args.detector or "kit GPT-2 (local:gpt2), online, random head", "texts": len(texts)}
    # the machine read as the run ends: the 5- and 15-minute load averages cover it
    meta |= {"machine": machine_facts(), "command": job_command()}
    report = {"meta": meta, "score": score, "serve": served}
    write_results("bench_serve", report, markdown(report))


def markdown(report: dict) -> str:
    meta, score, served = report["meta"], report["score"], report["serve"]
    machine = machine_words(meta) if "machine" in meta else f"{meta['cores']} cores"
    base = round(score["texts"] / score["wall_s"], 2)
    job = round(score["texts"] / score["job_s"], 2) if score["job_s"] else None
    rows = [
        [f"score, end to end ({score['wall_s']} s)", base, "1.00x", "", "", 0, ""],
        [f"score, the job alone ({score['job_s']} s)", job, f"{job / base:.2f}x" if job else "", "", "", 0, ""],
    ]
    for r in served["levels"]:
        rows.append([f"serve, {r['clients']} clients", r["texts_per_s"], f"{r['texts_per_s'] / base:.2f}x"])
        rows[-1] += [r["p50_ms"], r["p99_ms"], r["errors"], "yes" if r["same_p_as_score"] else "NO"]
    columns = ["run", "texts/s", "vs score (end to end)", "p50 ms", "p99 ms", "errors", "same p(H) as score"]
    return page(
        "# `hades-ray serve` against `hades-ray score` on the same texts",
        f"{meta['texts']} demo leads, content words; detector: {meta['detector']}; machine: {machine}. "
        "score: one `hades-ray score --executor local` process; serve: one `hades-ray serve` (private Ray "
        "cluster, one replica, default `serve` section), one text per `POST /score`, every text once per "
        f"concurrency level. Command: `{meta['command']}`.",
        pipe_table(columns, rows, align="lrrrrrl"),
        f"Peak memory: score {score['peak_rss_mib']} MiB (its process); serve {served['peak_rss_mib']} MiB (its "
        f"process tree: driver, Ray, Serve controller and proxy, replica). Serve was ready "
        f"{served['ready_seconds']} s after start; SIGTERM ended it with exit code {served['sigterm_exit']}.",
    )


if __name__ == "__main__":
    main()
