"""The guard benchmark's results page (jobs/bench_guard.py): its arms by name, its tables, the runs before
it carried along, and its reading in plain words, each sentence following from a figure of the report."""

from __future__ import annotations

import json
from pathlib import Path

from hades_ray.markdown import cell, page, spec_table
from hades_ray.train.detector_set import DETECTOR_KINDS

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


def markdown(report: dict, machine: str) -> str:
    """The page of a bench_guard report; ``machine``: the machine it ran on, in words."""
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
    trained = [(n, det[n]["valid"], det[n]["seconds"]) for n in DETECTOR_KINDS]
    return page(
        "# Online guard benchmark",
        f"Machine: {machine}; torch threads {report['torch_threads']}. {report['note']}\n"
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
