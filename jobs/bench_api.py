"""The Python API against the command: ``Detector.score`` of the same texts as ``hades-ray score``
(the same p(H) bits? the wall time of each, and peak memory), and ``WordStream.feed`` per generated
token, in milliseconds.

The detector: an online span classifier on the kit's GPT-2 (the micro models where the kit is not built),
random head; hades_ray/docs/benchmarks.md says how each arm runs. Writes jobs/results/bench_api.{json,md}.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.detect.synthetic import random_detector
from hades_ray.markdown import pipe_table
from hades_ray.pipeline.laps import Laps
from jobs.bench_common import job_command, kit_or_micro, machine_words, options, page, peak_rss_mib, scratch, score_cli
from jobs.bench_common import texts_file, write_results


def run_api(detector: str, texts: list[str], expected: list[dict]) -> tuple[dict, object]:
    from hades_ray import Detector

    laps = Laps()
    det = Detector.open(detector)
    first, cold = det.score(texts), laps.lap()
    again, warm = det.score(texts), laps.lap()
    strip = lambda r: {k: v for k, v in r.items() if k not in ("id", "source")}  # noqa: E731
    same = [strip(r) for r in first] == [strip(r) for r in expected] and again == first
    words = sum(r["n_words"] for r in first)
    figures = {"cold_s": round(cold, 2), "warm_s": round(warm, 2), "same_bits_as_score": same, "words": words}
    return figures | {"peak_rss_mib": round(peak_rss_mib(), 1)}, det


def run_stream(det, openings: list[str], tokens: int) -> dict:
    import numpy as np
    import torch

    from hades_ray.guard.sampling import Sampling, plain_generate, prepare_tokenizer
    from hades_ray.guard.text import TokenText
    from hades_ray.models.registry import load_causal_lm

    tokenizer, model = load_causal_lm("local:gpt2", "cpu")
    tokenizer = prepare_tokenizer(tokenizer)
    torch.manual_seed(0)
    generated = plain_generate(model, tokenizer, openings, Sampling(max_new_tokens=tokens, no_end=True), seed=0)
    per_token, words = [], 0
    for opening, ids in zip(openings, generated):
        stream, text = det.stream(), TokenText(tokenizer, tokenizer(opening)["input_ids"])
        for k in range(1, len(ids) + 1):
            so_far = opening + text.generated(ids[:k])
            began = time.perf_counter()
            words += len(stream.feed(so_far, final=k == len(ids)))
            per_token.append((time.perf_counter() - began) * 1000)
    ms = np.array(per_token)
    figures = {"median": np.median(ms), "mean": ms.mean(), "p90": np.percentile(ms, 90)}
    out = {"prompts": len(openings), "tokens": int(ms.size), "words": words}
    return out | {f"ms_per_token_{name}": round(float(value), 2) for name, value in figures.items()}


FLAGS = {
    "--texts": (100, "demo leads scored by both"),
    "--prompts": (5, "lead openings generated from for the stream"),
    "--tokens": (60, "tokens generated after each opening"),
}


def main(argv=None) -> None:
    args = options(__doc__.split("\n\n")[0], FLAGS, argv)
    import torch

    from hades_ray.io.demo_corpus import read_demo_records
    from hades_ray.models.registry import resolve_model

    torch.set_num_threads(1)  # as the command's actor (detect.torch_threads), so both use one core
    kit = kit_or_micro()
    work = scratch("bench_api_")
    detector = random_detector(work / "detector", resolve_model("local:gpt2"), "online")
    records = read_demo_records()
    texts = [r["text"] for r in records[: args.texts]]
    data = texts_file(texts, work / "texts.jsonl")
    cli = score_cli(detector, data, work / "cli")
    expected = [json.loads(line) for line in (work / "cli" / "scores.jsonl").read_text().splitlines()]
    api, det = run_api(detector, texts, expected)
    cli_after = score_cli(detector, data, work / "cli-after")  # the machine's load moves: score again after
    openings = [" ".join(r["text"].split()[:8]) for r in records[args.texts : args.texts + args.prompts]]
    stream = run_stream(det, openings, args.tokens)
    models = "the offline kit's GPT-2 (local:gpt2)" if kit else "the micro random-weight GPT-2 (kit not built)"
    report = {"command": job_command(), "machine": machine_words({}), "score_cli": cli, "score_cli_after": cli_after}
    report |= {"detector": f"online span classifier on {models}, random head, window 160, content words"}
    report |= {"score_api": api, "stream": stream}
    print(json.dumps(report))  # the figures, whatever happens to the page
    write_results("bench_api", report, markdown(report))


def markdown(report: dict) -> str:
    cli, api, stream = report["score_cli"], report["score_api"], report["stream"]
    after = report.get("score_cli_after") or cli
    rows = [
        ["hades-ray score --executor local (child process, end to end)", cli["wall_s"], "", cli["peak_rss_mib"]],
        ["the job alone (its summary's wall seconds)", cli["job_s"], "", ""],
        ["hades-ray score again, after the API runs (end to end)", after["wall_s"], "", ""],
        ["its job alone", after["job_s"], "", ""],
        ["`Detector.open` + first `det.score` (cold)", api["cold_s"], api["same_bits_as_score"], api["peak_rss_mib"]],
        ["`det.score` again (warm)", api["warm_s"], api["same_bits_as_score"], ""],
    ]
    return page(
        "# The Python API against hades-ray score",
        f"{cli['texts']} demo leads ({api['words']} content words); detector: {report['detector']}; "
        f"machine: {report['machine']}. Run: `{report['command']}`.",
        pipe_table(["run", "wall s", "same p(H) bits as score", "peak RSS MiB"], rows),
        f"`stream.feed` per generated token ({stream['tokens']} tokens: {stream['prompts']} prompts sampled by "
        f"the detector's backbone GPT-2, each token's text so far fed whole, {stream['words']} words returned): "
        f"median {stream['ms_per_token_median']} ms, mean {stream['ms_per_token_mean']} ms, p90 "
        f"{stream['ms_per_token_p90']} ms. Each feed scores the whole text so far (as `POST /score/next` "
        "does), so the cost grows with the text.",
    )


if __name__ == "__main__":
    main()
