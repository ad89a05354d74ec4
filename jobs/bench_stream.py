"""Detection at the generator's pace, side by side in one run (issue 46.4). Feeds: held-out leads fed a word at
a time to online span classifiers on MiniLM and the kit's GPT-2 (``words="all"``), before (each feed scores
the whole text so far, ``Detector.score``) and after (``Detector.stream().feed``): at each length an untimed
feed up to a few words before it, then ``--feeds`` timed single-word feeds. Guard: ``guarded_generate``
against plain sampling (``model.generate``, the same prompts, settings and seed) on the kit's GPT-2 and a
paper-sized one (random weights): a probe on the generator with nothing flagged and with words taken back,
and the span classifier's cached judge. Watch: greedy ``generate`` judged by the probe and by the span
classifier as stopping criteria. Quality: given trained folders, evaluate's metrics on one test split.
Writes jobs/results/bench_stream.{json,md}.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jobs.bench_common import cell, kit_or_micro, machine_words, options, page, peak_rss_mib, scratch  # noqa: E402
from jobs.bench_common import spec_table, write_results  # noqa: E402

PROMPTS = ["The city of", "In 1990 the band", "Marie Curie was born in", "The river flows"]
QUALITY = ("accuracy", "h_precision", "h_recall", "h_f1", "n_precision", "n_recall", "n_f1", "gmean", "bss", "auc")


class BeforeStream:
    """The stream before issue 46: every feed scores the whole text so far."""

    def __init__(self, det):
        self.det, self.since = det, 0

    def feed(self, text: str, final: bool = False) -> list[dict]:
        words = [w for w in self.det.score(text, words="all")["words"] if w["start"] >= self.since]
        words = [w for w in words if final or w["end"] < len(text)]
        self.since = words[-1]["end"] if words else self.since
        return words


ARMS = {"before": BeforeStream, "after": lambda det: det.stream(words="all")}


def detectors(kit: bool) -> dict[str, str]:
    """Random-head online detectors (speed does not depend on the head's weights), window 160 tokens."""
    from hades_ray.detect.synthetic import random_detector
    from hades_ray.models.registry import minilm_path, resolve_model

    folder = scratch("hades_bench_stream_")
    gpt2 = resolve_model("local:gpt2")
    return {
        "encoder (MiniLM)": random_detector(folder / "minilm", str(minilm_path()), "online", 160),
        f"causal ({'kit' if kit else 'micro'} GPT-2)": random_detector(folder / "gpt2", str(gpt2), "online", 160),
    }


def feed_costs(stream, prefixes: list[str], at: int, feeds: int) -> list[float]:
    """Milliseconds of each of ``feeds`` single-word feeds of a new ``stream`` ending at word ``at``, after an
    untimed feed of the text before them."""
    stream.feed(prefixes[at - feeds - 1])
    costs = []
    for k in range(at - feeds, at):
        started = time.perf_counter()
        stream.feed(prefixes[k])
        costs.append((time.perf_counter() - started) * 1000)
    return costs


def feeds(args, kit: bool) -> dict:
    from hades_ray import Detector
    from hades_ray.models.kit import heldout_word_prefixes

    prefixes, out = heldout_word_prefixes(max(args.at)), {}
    for name, folder in detectors(kit).items():
        det = Detector.open(folder)
        for arm in args.arms:
            cells = out.setdefault(name, {}).setdefault(arm, {})
            for n in args.at:
                costs = feed_costs(ARMS[arm](det), prefixes, n, args.feeds)
                cells[str(n)] = {"median_ms": round(statistics.median(costs), 2), "ms": [round(c, 2) for c in costs]}
                print(name, arm, n, cells[str(n)], flush=True)
    return out


def generators(tmp: Path, kit: bool) -> dict[str, str]:
    from hades_ray.models.registry import resolve_model
    from hades_ray.plan.measure import paper_sized_generator

    gpt2 = resolve_model("local:gpt2")
    named = {f"{'kit' if kit else 'micro'} GPT-2": gpt2}
    return named | {"paper-sized GPT-2": paper_sized_generator(tmp / "gpt2-paper", gpt2)}


def guard(model, tokenizer, probe: str, span: str, args) -> dict:
    """The guard's arms on one generator: a probe on it (nothing flagged; words above its judged words' 90th
    percentile taken back) and the span classifier's cached causal judge (nothing flagged)."""
    from hades_ray.detect.detector import Detector
    from hades_ray.guard.judge import scorer_judge
    from hades_ray.guard.loop import GuardSettings, guarded_generate
    from hades_ray.guard.probe_bench import guard_cost
    from hades_ray.guard.probe_judge import probe_guard_judge
    from hades_ray.guard.sampling import Sampling
    from hades_ray.text.languages import DEFAULT_LANGUAGE as ENGLISH

    sampling = Sampling(max_new_tokens=args.tokens, no_end=True)
    quiet = probe_guard_judge(Detector.open(probe), model, 1.0, "content", lang=ENGLISH)
    got = guarded_generate(model, tokenizer, PROMPTS, sampling, quiet, GuardSettings(1.0, 0), 0)
    p = sorted(w["p"] for g in got for w in g["scores"])
    taking = probe_guard_judge(Detector.open(probe), model, p[int(0.9 * len(p))], "content", lang=ENGLISH)
    span_judge = scorer_judge(Detector.open(span).scorer("online"), 1.0, "content", lang=ENGLISH)
    judges = {"probe": (quiet, 3), "probe, words taken back": (taking, 3), "span classifier": (span_judge, 3)}
    return guard_cost(model, tokenizer, PROMPTS, judges, sampling, args.repeats)


def watch(model, tokenizer, probe: str, span: str, args) -> dict:
    from hades_ray import Detector
    from hades_ray.guard.probe_bench import generation_cost

    probe_det, span_det = Detector.open(probe), Detector.open(span)
    watchers = {"probe": lambda: probe_det.probe(model, tokenizer, stop=False),
                "probe_all": lambda: probe_det.probe(model, tokenizer, stop=False, words="all"),
                "span_classifier": lambda: span_det.stopping_criteria(tokenizer, threshold=1.0)}  # fmt: skip
    return generation_cost(model, tokenizer, PROMPTS, watchers, new_tokens=args.tokens, repeats=args.repeats)


def generation(args, kit: bool) -> tuple[dict, dict]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from hades_ray.guard.probe_bench import random_probe_and_span
    from hades_ray.guard.sampling import prepare_tokenizer

    guards, watches = {}, {}
    tmp = scratch("hades_bench_stream_gen_")
    for name, generator in generators(tmp, kit).items():
        tokenizer = prepare_tokenizer(AutoTokenizer.from_pretrained(generator))
        model = AutoModelForCausalLM.from_pretrained(generator).eval()
        probe, span = random_probe_and_span(tmp / name, generator)
        if "guard" in args.parts:
            guards[name] = guard(model, tokenizer, probe, span, args)
            print(name, "guard", guards[name], flush=True)
        if "watch" in args.parts:
            watches[name] = watch(model, tokenizer, probe, span, args)
            print(name, "watch", watches[name], flush=True)
    return guards, watches


def markdown(report: dict, args) -> str:
    blocks = [f"{machine_words(report)}; peak memory {report['peak_rss_mib']:.0f} MiB; torch on 1 thread."]
    if report["feeds"]:
        at = report["at"]
        rows = [(name, arm, [cells[str(n)]["median_ms"] for n in at]) for name, arms in report["feeds"].items()
                for arm, cells in arms.items()]  # fmt: skip
        spec = {"detector": lambda r: r[0], "arm": lambda r: r[1]}
        spec |= {f"ms per feed at {n} words": lambda r, k=k: f"{r[2][k]:.1f}" for k, n in enumerate(at)}
        spec[f"{at[-1]} / {at[0]}"] = lambda r: f"{r[2][-1] / r[2][0]:.2f}x"
        spec[f"{at[-1]} / {at[1]}"] = lambda r: f"{r[2][-1] / r[2][1]:.2f}x"
        blocks += ["## A stream's cost per feed as its text grows", f"The median of {report['feeds_timed']} "
                   "single-word feeds at each length; the kit's GPT-2 where it is built, else the micro one.",
                   spec_table(spec, rows)]  # fmt: skip
    if report["guard"]:
        rows = [{"model": m, "arm": a, **v, "ms": 1e3 * v["s_per_token"]} for m, arms in report["guard"].items()
                for a, v in arms.items()]  # fmt: skip
        spec = {"generator": cell("model"), "arm": cell("arm"), "ms per kept token": cell("ms", ".2f"),
                "over plain": cell("ratio", ".3f"), "words taken back": cell("words_taken_back"),
                "ms per word taken back": cell("ms_per_word_taken_back", ".1f")}  # fmt: skip
        blocks += ["## The guard against plain sampling", f"`guarded_generate` of {args.tokens} tokens (never "
                   f"ending early) for each of {len(PROMPTS)} prompts in one batch against `model.generate` with "
                   "the same settings (the model's, top-k 50) and seed; content words judged; best of "
                   f"{args.repeats} runs after a warm-up. Nothing flagged, the guard draws plain sampling's "
                   "tokens. Taken back: words above the 90th percentile of the judged words' p(H), up to 3 times "
                   "each; a word taken back costs the arm's time beyond plain generation's for the same tokens.",
                   spec_table(spec, rows)]  # fmt: skip
    if report["watch"]:
        rows = [{"model": m, **{k: v["ratio"] for k, v in arms.items()}, "ms": 1e3 * arms["plain"]["s_per_token"]}
                for m, arms in report["watch"].items()]  # fmt: skip
        spec = {"generator": cell("model"), "plain ms/token": cell("ms", ".2f"), "probe": cell("probe", ".3f"),
                "probe, all words (no spaCy)": cell("probe_all", ".3f"),
                "span classifier (a second forward)": cell("span_classifier", ".3f")}  # fmt: skip
        blocks += ["## Judging `model.generate`: the probe beside the span classifier", f"Greedy `generate` of "
                   f"{args.tokens} tokens for each of {len(PROMPTS)} prompts, never stopped; time per token over "
                   "plain generation (best of the timed runs; random heads: their weights do not change the cost). "
                   "Content words (`score.words`) are found by spaCy once per completed word; with all words no "
                   "spaCy runs.", spec_table(spec, rows)]  # fmt: skip
    if report["quality"]:
        quality = [{"detector": k, **{m: 100 * v.get(m, float("nan")) for m in QUALITY}, "n": v.get("n")}
                   for k, v in report["quality"].items()]  # fmt: skip
        spec = {"detector": cell("detector"), **{m: cell(m, ".2f") for m in QUALITY}, "n": cell("n")}
        blocks += ["## Quality", f"On `{args.test}` (evaluate's metrics, %):", spec_table(spec, quality)]
    return page("# Detection at the generator's pace", *blocks)


def main(argv=None) -> int:
    parts = ("feeds", "guard", "watch")
    flags = {"--parts": (list(parts), "what to measure", {"choices": parts})}
    flags["--arms"] = (list(ARMS), "which streams to time", {"choices": list(ARMS)})
    flags["--at"] = ([50, 300, 1000], "text lengths in words")
    flags["--feeds"] = (5, "timed single-word feeds at each length")
    flags["--tokens"] = (48, "tokens each prompt generates in the guard and watch parts")
    flags["--repeats"] = (3, "timed runs per guard and watch arm, after one warm-up; the best is kept")
    flags["--trained"] = ([], "trained folders NAME=FOLDER (a probe's, span classifiers') scored on --test",
                          {"nargs": "*"})  # fmt: skip
    flags["--test"] = ("", "the HaDes-format test split the --trained folders are evaluated on")
    args = options(__doc__.splitlines()[0], flags, argv)
    bad = [item for item in args.trained if "=" not in item]
    if args.trained and (bad or not args.test):  # said before any work
        sys.exit(f"bench_stream: --trained takes NAME=FOLDER and needs --test (got {' '.join(bad) or 'no --test'})")
    import torch

    from hades_ray.guard.probe_bench import compare_quality

    torch.set_num_threads(1)  # as detect.torch_threads: what Detector.score and the stream run with
    kit = kit_or_micro()
    report = {"at": args.at, "feeds_timed": args.feeds, "tokens": args.tokens, "kit": kit}
    report["feeds"] = feeds(args, kit) if "feeds" in args.parts else {}
    report["guard"], report["watch"] = generation(args, kit) if {"guard", "watch"} & set(args.parts) else ({}, {})
    report["quality"] = compare_quality(dict(i.split("=", 1) for i in args.trained), args.test) if args.trained else {}
    report["peak_rss_mib"] = peak_rss_mib()
    write_results("bench_stream", report, markdown(report, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
