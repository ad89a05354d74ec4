"""Is the online guard worth it? Generations with and without it, side by side (issue 10, part 3): plain
``model.generate`` and, per judge (encoder, cached causal GPT-2, causal per word, a small causal), judging
only (its tokens must equal plain's) and guarding, on held-out prompts with the same seeds; the judges
trained here on perturbed enwiki leads (hades_ray/docs/benchmarks.md says what each arm measures).
Writes jobs/results/bench_guard.{json,md}. Skips (exit 0) when ../shared/data is absent.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.detect.synthetic import random_detector
from hades_ray.guard.arms import ArmSettings, arm_figures, lr_agreement, run_arms
from hades_ray.guard.metrics import cost_floor, final_text_check, flag_share_change_ci, generation_perplexity
from hades_ray.guard.metrics import flag_figures, matched_threshold, online_p
from hades_ray.pipeline import storage
from hades_ray.pipeline.laps import Laps
from hades_ray.text.languages import DEFAULT_LANGUAGE as ENGLISH  # English prompts (ENWIKI)
from hades_ray.train.detector_set import DETECTOR_KINDS, trained_detectors
from jobs.bench_common import ENWIKI, RESULTS, ForwardClock, Sampler, job_command, kit_or_micro, machine_words
from jobs.bench_common import cell, options, page, spec_table, write_results

# Judges by arm prefix: the encoder (online); the causal detector on the kit's GPT-2, cached, and as before its
# cache (one forward per word over its own view); a cached causal judge smaller than the generator (the micro
# kit's 2-layer, 32-wide GPT-2, random head): what the guard costs when a judge forward is cheap (p(H) noise).
JUDGES = {"": ("online", "encoder"), "causal_": ("causal", "causal")}
JUDGES |= {"causal_word_": ("causal_word", "causal per word"), "small_": ("small", "small causal")}
MODES = {"scored": "judge only", "guarded": "guarded"}
JUDGED = {prefix + mode: judge for prefix, (judge, _) in JUDGES.items() for mode in MODES}
ARMS = ("plain", *JUDGED)
NAMES = {p + m: f"{name}: {w}" for p, (_, name) in JUDGES.items() for m, w in MODES.items()}
NAMES["plain"] = "plain `generate`"
FOLDER = {"online": "online", "causal": "causal", "causal_word": "causal", "small": "small"}  # each judge's detector
SMALL_MATCHED = ("causal_scored", "small_scored")  # the small judge's threshold flags the first's share on it
DETECTORS = tuple(DETECTOR_KINDS)  # causal: the online detector on the offline kit's GPT-2


def _fmt(value, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


ARM_ROWS = (
    ("mean p(H), generated content words (judge)", "mean_p"),
    ("90th percentile p(H) (judge)", "p90_p"),
    ("share flagged at the judge's threshold", "share_flagged"),
    ("perplexity under the generator", "perplexity"),
    *((key.replace("_", "-"), key) for key in ("distinct_1", "distinct_2")),
    *((key.replace("_", " "), key) for key in ("new_tokens", "tokens_per_s", "cpu_seconds", "generator_forwards")),
    *((key.replace("_", " "), key) for key in ("judge_forwards", "judge_forward_seconds", "interventions")),
    ("resident memory before / peak during the arm, MiB", ("rss_before_mib", "peak_rss_mib")),
    ("word positions replaced", "words_replaced"),
    ("flagged words left in the text", "flagged_kept_after_retries"),
)
AGREEMENT_ROWS = ("lr_mean_p", "lr_share_flagged", "share_outputs_agreeing", "agreeing_with_no_flags")
AGREEMENT_ROWS += ("share_agreeing_among_outputs_the_judge_flags", "word_kappa")
AGREEMENT_ROWS += ("lr_flags_where_judge_flags", "lr_flags_where_judge_does_not")
FLOOR = {"overhead": "overhead", "cpu_overhead": "overhead in CPU time", "overhead_floor": "floor"}
FLOOR |= {"judge_forwards_per_step": "judge forwards per step", "judge_forward_ms": "ms per judge forward"}
FLOOR |= {"generator_step_ms": "ms per generator step (plain)", "extra_steps": "steps against plain"}
HISTORY_ARMS = ("scored", "guarded", "causal_scored", "causal_guarded", "causal_word_scored", "causal_word_guarded")


def _cell(figures: dict, key) -> str:
    return " / ".join(_fmt(figures.get(k)) for k in key) if isinstance(key, tuple) else _fmt(figures.get(key))


def _clauses(checks: dict) -> str:
    """Recorded p(H) against score's, one clause per arm."""
    return "; ".join(
        f"{k} {v['max_abs_diff']:.1e} over {v['words']} words, {v['flags_differing']} flags"
        + (f", {v['unaligned']} words moved" if v.get("unaligned") else "")
        for k, v in checks.items()
    )


def markdown(report: dict) -> str:
    arms, det, agree, x = report["arms"], report["detectors"], report["agreement"], "{:.2f}x".format
    arm_table = {"": lambda row: row[0]} | {NAMES[a]: lambda row, a=a: _cell(arms[a], row[1]) for a in ARMS}
    ratios = list(FLOOR)[:2]  # the measured overheads; the rest are the floor's own figures
    floors = [{"arm": n, **{k: x(report[f"{k}_{n}"]) for k in ratios}, **f} for n, f in report["floor"].items()]
    floor_table = {"arm": cell("arm")} | {w: cell(k, "" if k in ratios else ".2f") for k, w in FLOOR.items()}
    runs = report.get("history", [])
    now = [{"run": "this run", **{k: report[f"overhead_{k}"] for k in HISTORY_ARMS}}] if runs else []
    history = {"run": cell("run")} | {NAMES[k]: lambda r, k=k: x(r[k]) if k in r else "n/a" for k in HISTORY_ARMS}
    agree_table = {"": str} | {a: lambda k, a=a: _fmt(agree[a][k]) for a in ("plain", "guarded")}
    same = all(a.get("same_each_time", True) for a in report["arms"].values())
    lo, hi = report["lr_flag_share_change_ci"]
    reused = f"; reused from {det['reused_from']}." if det.get("reused_from") else "."
    trained = [(n, det[n]["valid"], det[n]["seconds"]) for n in DETECTORS]
    return page(
        "# Online guard benchmark",
        f"Machine: {machine_words(report)}; torch threads {report['torch_threads']}. {report['note']}\n"
        f"Command: `{report['command']}`",
        f"{report['prompts']} held-out prompts ({report['prompts_skipped_too_long']} longer than the generator's "
        f"context passed over), {report['max_new_tokens']} new tokens each, sampling {report['sampling']}, max "
        f"retries {report['max_retries']}, thresholds {report['threshold']:.3f} (encoder), "
        f"{report['causal_threshold']:.3f} (causal), {report['small_threshold']:.3f} (small: the quantile that "
        f"flags the causal judge's share) ({report['threshold_source']}); batches of {report['batch_size']} (a "
        f"seed each), guarded arms through {report.get('slots', 0)} slots (0: batches); {report.get('repeats', 1)} "
        f"runs of every arm in turn, times their medians, the same tokens each run: **{same}**.",
        f"Judges: encoder, an online MiniLM span classifier ({report['judge_window']}-token window, a forward per "
        f"judged word); causal, the same on the kit's GPT-2 ({report['causal_window']}-token window, stride "
        f"{report['causal_stride']}) with each row's key/value cache, and `per word` without it; small, the micro "
        "kit's GPT-2 under a random head (its p(H) is noise; it measures cost only).",
        spec_table(arm_table, ARM_ROWS),
        f"Judge-only tokens equal plain `generate`'s: **{report['scored_equals_plain']}** (encoder), "
        f"**{report['causal_scored_equals_plain']}** (causal). The floor: an arm's cost if its only extras were its "
        "judge's forwards and its extra generator steps, at plain's time per step:",
        spec_table(floor_table, floors),
        spec_table(history, [*runs, *now]) if runs else None,
        "Recorded p(H) against `hades-ray score`'s scorer on the same text and judge (max |diff|, flags that "
        f"differ): {_clauses(report['score_check'])}. Against the final texts: "
        f"{_clauses(report['final_text_check'])}. Rescored per word afterwards (encoder): "
        + ", ".join(f"{k} {v:.1e}" for k, v in report["rescoring_max_abs_diff"].items())
        + f". Causal judge on the plain texts: mean p(H) {_fmt(report['causal_on_plain']['mean_p'])}, share "
        f"flagged {_fmt(report['causal_on_plain']['share_flagged'])}.",
        f"## Independent check: the LR detector on the first {agree['guarded']['outputs']} outputs",
        spec_table(agree_table, AGREEMENT_ROWS),
        f"LR threshold {report['lr_threshold']:.3g}. LR flag share, guarded minus plain: 95% bootstrap interval "
        f"[{lo:+.3f}, {hi:+.3f}].",
        "## Detectors (trained in this run)",
        f"Instances from {report['train_docs']} other leads: {det['instances']}; perturbation "
        f"{det.get('perturb_seconds', 0):.0f} s{reused}",
        [
            f"- {n}: validation G-Mean {_fmt(v.get('gmean'))}, AUC {_fmt(v.get('auc'))}, trained in {s:.0f} s"
            for n, v, s in trained
        ],
        "## What this means, and what it does not",
        report["reading"],
        f"Whole run: {report['wall_seconds']:.0f} s.",
    )


def carried_history(path: Path) -> list[dict]:
    """The last run's history with that run's own overheads appended under its ``label``."""
    if not path.is_file():
        return []
    last = json.loads(path.read_text())
    entry = {"run": last.get("label") or "the previous run"}
    entry |= {k: round(last[f"overhead_{k}"], 2) for k in HISTORY_ARMS if f"overhead_{k}" in last}
    return [*last.get("history", []), entry]


def reading(report: dict) -> list[str]:
    """The plain-words reading of the figures; each sentence follows from a number in the report."""
    plain, guarded = report["arms"]["plain"], report["arms"]["guarded"]
    lr_plain, lr_guarded = report["agreement"]["plain"], report["agreement"]["guarded"]
    lo, hi = report["lr_flag_share_change_ci"]
    verdict = "lower after guarding" if hi < 0 else "higher after guarding" if lo > 0 else "no clear change (spans 0)"
    kappa = lr_guarded["word_kappa"]
    kappa_words = "n/a" if kappa is None else "barely" if kappa < 0.2 else "weakly" if kappa < 0.4 else "moderately+"
    floor = report["floor"]
    return [
        f"- The judge's own p(H) falls {plain['mean_p']:.3f} -> {guarded['mean_p']:.3f}, its flag share "
        f"{plain['share_flagged']:.3f} -> {guarded['share_flagged']:.3f}: by construction (it rejects what it "
        "scores high), so it shows the guard works, not that the text is more faithful.",
        f"- The judges are weak (encoder validation G-Mean "
        f"{_fmt(report['detectors']['online']['valid'].get('gmean'))}, on synthetic REPLACE labels, not human ones).",
        f"- The independent LR detector flags {lr_plain['lr_share_flagged']:.3f} of plain words, "
        f"{lr_guarded['lr_share_flagged']:.3f} of guarded ones: interval [{lo:+.3f}, {hi:+.3f}], {verdict}; "
        f"it agrees {kappa_words} with the encoder judge (word kappa {_fmt(kappa)}).",
        f"- Fluency: perplexity {plain['perplexity']:.1f} -> {guarded['perplexity']:.1f}, distinct-1/2 "
        f"{plain['distinct_1']:.3f}/{plain['distinct_2']:.3f} -> {guarded['distinct_1']:.3f}/"
        f"{guarded['distinct_2']:.3f} (under the generator that was steered: not a quality measure by itself).",
        f"- Cost: {report['overhead_guarded']:.2f}x guarded with the encoder ({report['overhead_scored']:.2f}x "
        f"judging alone), {report['overhead_causal_guarded']:.2f}x with the cached causal judge "
        f"({report['overhead_causal_scored']:.2f}x), {report['overhead_small_guarded']:.2f}x with the small one "
        f"({report['overhead_small_scored']:.2f}x). A judge the generator's size cannot cost less than "
        f"{floor['causal_scored']['overhead_floor']:.2f}x judging, {floor['causal_guarded']['overhead_floor']:.2f}x "
        f"guarding; the ratio falls toward 1 + judge forward / generator step, plus the resampled steps "
        f"({floor['causal_guarded']['extra_steps']:.2f}x); shared cores move timings.",
        "- Not measured: factual accuracy, and any generator or detector other than the offline kit's.",
    ]


SLOTS = "guarded arms: rows in flight, a done row's slot taking the next prompt (guard.slots); 0: batches, as plain"
FLAGS = {
    "--train-docs": (60, "leads perturbed to train the detectors"),
    "--prompts": (100, "held-out prompts"),
    "--max-new-tokens": (60, "new tokens per prompt"),
    "--max-retries": (3, "resamples per flagged word"),
    "--threshold": (None, "judge threshold (default: the stored one)", {"type": float}),
    "--top-k": (50, "sampling top-k, every arm"),
    "--allow-end": (False, "let generations stop at the end token (default: full length)"),
    "--batch-size": (20, "prompts per batch (one seed per batch)"),
    "--slots": (20, SLOTS),
    "--repeats": (3, "runs of every arm, in turn; times are each arm's medians"),
    "--label": ("", "this run's name in the before -> after table of later runs"),
    "--agreement-outputs": (30, "outputs the (slow) LR detector scores"),
    "--threads": (1, "torch threads (the machine is shared)"),
    "--seed": (0, "seed of the detectors and the generations"),
    "--workdir": (None, "keep the perturbation and detectors here; a rerun reuses them (same --train-docs)"),
    "--set": ([], "config override KEY=VALUE", {"dest": "overrides", "action": "append"}),
    "--render": (False, "only rewrite bench_guard.md (and its reading) from bench_guard.json"),
}


def main(argv=None) -> int:
    args = options(__doc__.splitlines()[0], FLAGS, argv)
    if args.render:
        report = json.loads((RESULTS / "bench_guard.json").read_text())
        report["reading"] = reading(report)
        write_results("bench_guard", report, markdown(report))
        return 0
    if not ENWIKI.is_file():
        print(f"bench_guard: {ENWIKI} is absent; nothing to measure (skipped).")
        return 0
    import torch

    from hades_ray.config import load_config
    from hades_ray.guard.stages import prompt_fits
    from hades_ray.models.kit import heldout_prompts
    from hades_ray.models.registry import load_causal_lm
    from hades_ray.plan.machine import machine_facts
    from hades_ray.ray_runtime import init_ray
    from hades_ray.text.pipeline import load_pipeline

    torch.set_num_threads(args.threads)
    laps, machine = Laps(), machine_facts()  # the machine as the arms found it
    note = "Offline kit models: built." if kit_or_micro() else "Offline kit not built: micro models (noise)."
    # 2 candidates: the detectors need labels, not the best of 20; a 32-token window halves the judge's
    # cost (a forward per generated content word) against 64, keeping the run near 10 min on 2 cores.
    overrides = ["perturb.rank.num_candidates=2", "detect.epochs=3", "detect.window=32", "detect.feature_window=32"]
    config = load_config(overrides=[f"seed={args.seed}", *overrides, *args.overrides])
    init_ray(config.ray.address, config.ray.num_cpus)
    tokenizer, model = load_causal_lm(config.models.causal_lm, "cpu")
    fits = lambda p: prompt_fits(model, tokenizer, p, args.max_new_tokens)  # noqa: E731
    nlp = load_pipeline(config.language, config.spacy_model)
    prompts, too_long = heldout_prompts(ENWIKI, nlp, args.train_docs, args.prompts, fits)
    with storage.scratch_folder("bench_guard_") as tmp:
        work = Path(args.workdir) if args.workdir else tmp
        storage.makedirs(work)
        detectors = trained_detectors(config, work, ENWIKI, args.train_docs)
        detectors["small"] = small_judge(work, config.detect.window)
        report = measure(args, config, prompts, detectors, (tokenizer, model))
    report |= {"note": note, "train_docs": args.train_docs, "detectors": detectors, "seed": args.seed}
    report |= {"machine": machine, "prompts_skipped_too_long": too_long, "command": job_command()}
    report |= {"wall_seconds": laps.lap(), "label": args.label}
    report["history"] = carried_history(RESULTS / "bench_guard.json")
    report["reading"] = reading(report)
    write_results("bench_guard", report, markdown(report))
    return 0


def small_judge(work: Path, window: int) -> dict:
    """The micro kit's GPT-2 (2 layers, 32 wide) under a random online head, with the causal judge's
    window: a judge far cheaper than the generator, for its cost alone."""
    from hades_ray.models.micro import build_micro_causal_lm

    folder = work / "small"
    if not (folder / "detector.json").is_file():
        random_detector(folder, str(build_micro_causal_lm(work / "micro_gpt2")), "online", window)
    return {"dir": str(folder)}


def measure(args, config, prompts: list[dict], detectors: dict, generator) -> dict:
    from hades_ray.detect.detector import Detector
    from hades_ray.detect.incremental import CausalJudge, ViewJudge
    from hades_ray.guard.judge import score_differences
    from hades_ray.guard.sampling import Sampling, prepare_tokenizer
    from hades_ray.guard.text import TokenText

    tokenizer, model = generator
    prepare_tokenizer(tokenizer)
    stride = config.score.stride

    def scorer(name: str):
        return Detector.open(detectors[name]["dir"]).scorer("online", stride=stride)

    kinds = {"online": (ViewJudge, args.threshold), "causal": (CausalJudge, args.threshold)}
    kinds |= {"causal_word": (ViewJudge, args.threshold), "small": (CausalJudge, 0.5)}  # small: matched later
    judges = {name: kind(scorer(FOLDER[name]), t, "content", lang=config.lang) for name, (kind, t) in kinds.items()}
    judge = judges["online"]
    sampling = Sampling(max_new_tokens=args.max_new_tokens, top_k=args.top_k, no_end=not args.allow_end)
    texts_in = [p["prompt"] for p in prompts]
    clocks = (ForwardClock(model), {name: ForwardClock(j.scorer.model.backbone) for name, j in judges.items()})
    settings = ArmSettings(**{k: getattr(args, k) for k in ("max_retries", "batch_size", "slots", "repeats", "seed")})

    def match_small(arm: str, done: dict) -> None:
        if arm == "small_guarded":
            causal, small = ([w["p"] for r in done[a]["results"] for w in r["scores"]] for a in SMALL_MATCHED)
            judges["small"].threshold = matched_threshold(causal, small, judges["causal"].threshold)

    arm_judges = {arm: JUDGED.get(arm) for arm in ARMS}
    arms = run_arms(arm_judges, model, tokenizer, judges, texts_in, sampling, settings, clocks, Sampler, match_small)
    for r, prompt in zip(arms["plain"]["results"], texts_in):
        r["generation"] = TokenText(tokenizer, tokenizer(prompt)["input_ids"]).generated(r["tokens"])
    plain_tokens = [a["tokens"] for a in arms["plain"]["results"]]
    same = {n: plain_tokens == [a["tokens"] for a in arms[n]["results"]] for n in ("scored", "causal_scored")}
    # The loop already scored every word online with its left context; plain's words are the judge-only
    # arm's when their tokens match (checked above), else they are scored here.
    recorded = {name: [np.array([w["p"] for w in r["scores"]]) for r in arms[name]["results"]] for name in ARMS[1:]}
    figures, agree, drift, lr_scores, checks, finals = {}, {}, {}, {}, {}, {}
    lr_detector, k = Detector.open(detectors["lr"]["dir"]), args.agreement_outputs
    t_lr = lr_detector.threshold
    for name, arm in arms.items():
        texts = [(p, r["generation"]) for p, r in zip(texts_in, arm["results"])]
        p_online = recorded.get(name) or (
            recorded["scored"] if same["scored"] else online_p(judge.scorer, texts, lang=ENGLISH)
        )
        threshold = judges[JUDGED.get(name, "online")].threshold
        ppl = generation_perplexity(model, tokenizer, texts_in, [r["tokens"] for r in arm["results"]])
        figures[name] = arm_figures(arm, texts, p_online, threshold, ppl)
        if name in JUDGED:
            full = [TokenText(tokenizer, tokenizer(p)["input_ids"]).prompt + g for p, g in texts]
            folder = detectors[FOLDER[JUDGED[name]]]["dir"]
            same_scorer = Detector.open(folder).scorer(stride=stride)  # hades-ray score's
            finals[name] = final_text_check(same_scorer, full, arm["results"], threshold, lang=ENGLISH)
            checks[name] = score_differences(same_scorer, arm["calls"], threshold, config.lang)
        if name in ("plain", "guarded"):
            drift[name], lr_scores[name], agree[name] = lr_agreement(
                judge, lr_detector, config.detect, texts[:k], p_online[:k], lang=ENGLISH
            )
    causal_on_plain = np.concatenate(recorded["causal_scored"]) if same["causal_scored"] else np.zeros(0)
    causal_on_plain = flag_figures(causal_on_plain, judges["causal"].threshold)
    return {
        "lr_flag_share_change_ci": flag_share_change_ci(lr_scores["plain"], lr_scores["guarded"], t_lr, args.seed),
        "rescoring_max_abs_diff": drift,
        "score_check": checks,
        "final_text_check": finals,
        "arms": figures,
        "agreement": agree,
        "scored_equals_plain": same["scored"],
        "causal_scored_equals_plain": same["causal_scored"],
        "causal_on_plain": {key: causal_on_plain[key] for key in ("mean_p", "share_flagged")},
        **{f"overhead_{n}": figures["plain"]["tokens_per_s"] / figures[n]["tokens_per_s"] for n in JUDGED},
        **{f"cpu_overhead_{n}": figures[n]["cpu_seconds"] / figures["plain"]["cpu_seconds"] for n in JUDGED},
        "floor": {n: cost_floor(figures["plain"], figures[n]) for n in JUDGED},
        "small_threshold": judges["small"].threshold,
        "threshold": judge.threshold,
        "causal_threshold": judges["causal"].threshold,
        "judge_window": judge.scorer.window,
        "causal_window": judges["causal"].window,
        "causal_stride": judges["causal"].stride,
        "threshold_source": "--threshold" if args.threshold is not None else "stored in the detector folder",
        "lr_threshold": t_lr,
        "prompts": len(prompts),
        **{key: getattr(args, key) for key in ("max_new_tokens", "max_retries", "batch_size", "slots", "repeats")},
        "sampling": f"top-k {args.top_k}, temperature 1" + ("" if args.allow_end else ", end token suppressed"),
        "torch_threads": args.threads,
        "examples": [
            {"prompt": texts_in[k], **{a: arms[a]["results"][k]["generation"] for a in ("plain", "guarded")}}
            for k in range(min(3, len(texts_in)))
        ],
    }


if __name__ == "__main__":
    sys.exit(main())
