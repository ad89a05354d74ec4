"""The probe beside the span classifier, side by side in one run (issue 46.3): what judging costs
``model.generate`` per generated token against plain generation, on the kit's GPT-2 and a paper-sized one
(random weights, ``plan.measure.GPT2_SMALL``), and, given trained folders, evaluate's metrics on one test
split. Writes jobs/results/bench_probe.{json,md}.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray import Detector  # noqa: E402
from hades_ray.guard.probe_bench import compare_quality, generation_cost  # noqa: E402
from hades_ray.guard.probe_bench import random_probe_and_span  # noqa: E402
from hades_ray.models.registry import resolve_model  # noqa: E402
from hades_ray.pipeline import storage  # noqa: E402
from hades_ray.plan.measure import paper_sized_generator  # noqa: E402
from jobs.bench_common import cell, kit_or_micro, machine_words, options, page, peak_rss_mib, spec_table  # noqa: E402
from jobs.bench_common import write_results  # noqa: E402

FLAGS = {
    "--trained": ([], "trained folders NAME=FOLDER (a probe's and span classifiers') scored on --test", {"nargs": "*"}),
    "--test": ("", "the HaDes-format test split the --trained folders are evaluated on"),
    "--tokens": (48, "tokens each prompt generates (greedy, never stopped)"),
    "--repeats": (3, "timed runs per arm, after one warm-up; the best is kept"),
}
PROMPTS = ["The city of", "In 1990 the band", "Marie Curie was born in", "The river flows"]
QUALITY = ("accuracy", "h_precision", "h_recall", "h_f1", "n_precision", "n_recall", "n_f1", "gmean", "bss", "auc")


def cost(generator: str, probe: str, span: str, args) -> dict:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer, model = AutoTokenizer.from_pretrained(generator), AutoModelForCausalLM.from_pretrained(generator)
    probe_det, span_det = Detector.open(probe), Detector.open(span)
    watchers = {"probe": lambda: probe_det.probe(model.eval(), tokenizer, stop=False),
                "probe_all": lambda: probe_det.probe(model.eval(), tokenizer, stop=False, words="all"),
                "span_classifier": lambda: span_det.stopping_criteria(tokenizer, threshold=1.0)}  # fmt: skip
    return generation_cost(model, tokenizer, PROMPTS, watchers, new_tokens=args.tokens, repeats=args.repeats)


def main(argv=None) -> int:
    args = options(__doc__, FLAGS, argv)
    bad = [item for item in args.trained if "=" not in item]
    if args.trained and (bad or not args.test):  # said before any work
        sys.exit(f"bench_probe: --trained takes NAME=FOLDER and needs --test (got {' '.join(bad) or 'no --test'})")
    kit = resolve_model("local:gpt2") if kit_or_micro() else None
    report = {"generate": {}, "quality": {}, "tokens": args.tokens}
    with storage.scratch_folder("hades_bench_probe_") as tmp:
        paper = paper_sized_generator(Path(tmp) / "gpt2-paper", kit or resolve_model("local:gpt2"))
        for name, generator in (("kit GPT-2", kit), ("paper-sized GPT-2", paper)):
            if generator:
                report["generate"][name] = cost(generator, *random_probe_and_span(Path(tmp) / name, generator), args)
    if args.trained:
        report["quality"] = compare_quality(dict(item.split("=", 1) for item in args.trained), args.test)
    report["peak_rss_mib"] = peak_rss_mib()
    write_results("bench_probe", report, markdown(report, args))
    return 0


def markdown(report: dict, args) -> str:
    rows = [{"model": m, **{k: v["ratio"] for k, v in arms.items()}, "ms": 1e3 * arms["plain"]["s_per_token"]}
            for m, arms in report["generate"].items()]  # fmt: skip
    spec = {"generator": cell("model"), "plain ms/token": cell("ms", ".2f"), "probe": cell("probe", ".3f"),
            "probe, all words (no spaCy)": cell("probe_all", ".3f"),
            "span classifier (a second forward)": cell("span_classifier", ".3f")}  # fmt: skip
    quality = [{"detector": k, **{m: 100 * v.get(m, float("nan")) for m in QUALITY}, "n": v.get("n")}
               for k, v in report["quality"].items()]  # fmt: skip
    table = spec_table({"detector": cell("detector"), **{m: cell(m, ".2f") for m in QUALITY}, "n": cell("n")}, quality)
    return page(
        "# The probe beside the span classifier",
        f"{machine_words(report)}; greedy `generate` of {args.tokens} tokens for each of {len(PROMPTS)} prompts, "
        "never stopped; time per token over plain generation (best of the timed runs; the judges' heads are "
        "random: their weights do not change the cost). The probe and the span classifier judge content words "
        "(`score.words`), which spaCy finds once per completed word; with all words no spaCy runs. Peak memory "
        f"{report['peak_rss_mib']:.0f} MiB.",
        spec_table(spec, rows),
        ("Quality on `" + args.test + "` (evaluate's metrics, %):") if quality else None,
        table if quality else None,
    )


if __name__ == "__main__":
    sys.exit(main())
