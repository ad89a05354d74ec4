"""Is the online guard worth it? Generations with and without it, side by side (issue 10, part 3).

1. Detectors, trained here in a few minutes: the perturbation job on the first ``--train-docs`` leads
   of ../shared/data/enwiki2015_first_paragraphs.jsonl (replaced spans label 1, untouched content
   words label 0, as jobs/bench_detect.py does), then two ONLINE span classifiers, the guard's judges:
   one on MiniLM (an encoder: one forward per judged word) and one on the offline kit's GPT-2 (causal:
   scored incrementally with its key/value cache, hades_ray/detect/incremental.py), and an LR detector
   on features (the independent second opinion), all on the same instances.
2. Held-out prompts: the first two sentences of ``--prompts`` leads from further down the file that
   no detector trained on (and that the offline kit's held-out split kept out of the generator).
3. Five arms with the same seeds and sampling: plain ``model.generate``; per judge, the guarded loop
   with ``max_retries=0`` (scores every word, changes none: its tokens must equal plain's) and the guard.
4. Per arm: mean and 90th percentile online p(H) of the generated content words, the share flagged,
   the generator's perplexity of its generations, distinct-1/2, tokens/s, peak memory; and on the
   first ``--agreement-outputs`` outputs the LR detector's p(H) and its agreement with the encoder judge.
5. Every p(H) the loop recorded against what ``hades-ray score``'s scorer (hades_ray/detect/scorer.py)
   gives the final text with the same judge: max |diff| and flags that differ.

Writes jobs/results/bench_guard.{json,md}. Skips (exit 0) when ../shared/data is absent.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.guard.metrics import cost_floor, detector_p, distinct_n, final_text_check, flag_agreement
from hades_ray.guard.metrics import (
    flag_figures,
    flag_share_change_ci,
    generation_perplexity,
    matched_threshold,
    online_p,
)
from hades_ray.pipeline import storage
from hades_ray.detect.synthetic import random_detector
from hades_ray.markdown import pipe_table
from hades_ray.pipeline.laps import Laps
from hades_ray.train.learnability import learnability_files
from hades_ray.text.languages import DEFAULT_LANGUAGE as ENGLISH  # English prompts (ENWIKI)
from jobs.bench_common import ENWIKI, RESULTS, ForwardClock, Sampler, job_command, kit_or_micro, machine_words
from jobs.bench_common import write_results

ARMS = ("plain", "scored", "guarded", "causal_scored", "causal_guarded", "causal_word_scored", "causal_word_guarded")
ARMS += ("small_scored", "small_guarded")
JUDGED = {"scored": "online", "guarded": "online", "causal_scored": "causal", "causal_guarded": "causal"}
# The causal detector judged as before this judge had its cache: one forward per word over its own view.
JUDGED |= {"causal_word_scored": "causal_word", "causal_word_guarded": "causal_word"}
# A cached causal judge smaller than the generator (the micro kit's 2-layer, 32-wide GPT-2, random head):
# what the guard costs when a judge forward is cheaper than a generator step. Its p(H) means nothing.
JUDGED |= {"small_scored": "small", "small_guarded": "small"}
FOLDER = {"online": "online", "causal": "causal", "causal_word": "causal", "small": "small"}  # each judge's detector
DETECTORS = ("online", "lr", "causal")  # causal: the online detector on the offline kit's GPT-2
NAMES = {"plain": "plain `generate`", "scored": "encoder: judge only", "guarded": "encoder: guarded"}
NAMES |= {"causal_scored": "causal: judge only", "causal_guarded": "causal: guarded"}
NAMES |= {"causal_word_scored": "causal per word: judge only", "causal_word_guarded": "causal per word: guarded"}
NAMES |= {"small_scored": "small causal: judge only", "small_guarded": "small causal: guarded"}
TIMES = ("seconds", "cpu_seconds", "generator_forward_seconds", "judge_forward_seconds")


def trained_detectors(config, work: Path, docs: int) -> dict:
    """The detectors of an earlier run kept in ``work`` (same leads), else those missing trained now into
    it on the labelled instances of ``docs`` perturbed leads (unless done): the two online judges and the
    LR detector."""
    from hades_ray.train.fit import train_detector

    record = work / "detectors.json"
    kept = json.loads(record.read_text()) if record.is_file() else {}
    kept = kept if kept.get("train_docs") == docs else {}
    missing = [n for n in DETECTORS if n not in kept or not Path(kept[n]["dir"], "detector.json").is_file()]
    if not missing:
        return kept | {"reused_from": str(work)}
    data = learnability_files(config, work, ENWIKI, docs, {"train": 0.8, "valid": 0.2})
    detectors = kept | {key: data[key] for key in ("perturb_seconds", "instances") if key in data}
    causal = copy.deepcopy(config)
    causal.detect.backbone = config.models.causal_lm
    kinds = {"online": (config, "transformer", "online"), "lr": (config, "lr", "offline")}
    kinds["causal"] = (causal, "transformer", "online")
    for name in missing:
        settings, kind, mode = kinds[name]
        laps = Laps()
        folder = train_detector(settings, *data["paths"], work / name, kind, mode, 1)
        detectors[name] = {"dir": str(folder), "seconds": laps.lap()}
        detectors[name]["valid"] = json.loads((folder / "metrics.json").read_text())
    detectors["train_docs"] = docs
    storage.write(record, json.dumps(detectors, indent=2, default=str))
    return detectors


def run_arms(model, tokenizer, judges: dict, prompts: list[str], sampling, args) -> dict:
    """The arms over the same batches and seeds; texts, token ids, interventions, timings. ``judges``:
    the encoder (``online``) and the causal judge. With ``args.slots``, a guarded arm runs every prompt
    through that many slots (continuous batching) under the first batch's seed. The arms run
    ``args.repeats`` times in turn (a shared machine's speed drifts): the times are each arm's medians,
    the rest the first run's, and ``same_each_time`` says whether every run gave the same tokens."""
    arms: dict = {}
    clocks = (ForwardClock(model), {name: ForwardClock(j.scorer.model.backbone) for name, j in judges.items()})
    for _ in range(args.repeats):
        for arm in ARMS:
            if arm == "small_guarded":
                reference = judges["causal"].threshold
                p_of = {
                    a: [w["p"] for r in arms[a]["results"] for w in r["scores"]]
                    for a in ("causal_scored", "small_scored")
                }
                judges["small"].threshold = matched_threshold(p_of["causal_scored"], p_of["small_scored"], reference)
            run = _run_arm(arm, model, tokenizer, judges, prompts, sampling, args, clocks)
            first = arms.setdefault(arm, run | {f"{key}_each": [] for key in TIMES} | {"same_each_time": True})
            for key in TIMES:
                first[f"{key}_each"].append(run[key])
            first["same_each_time"] &= [r["tokens"] for r in run["results"]] == [r["tokens"] for r in first["results"]]
    for arm in arms.values():
        arm |= {key: float(np.median(arm[f"{key}_each"])) for key in TIMES}
    return arms


def _run_arm(arm: str, model, tokenizer, judges: dict, prompts, sampling, args, clocks) -> dict:
    """One timed run of one arm."""
    from hades_ray.guard.judge import RecordingJudge
    from hades_ray.guard.loop import GuardSettings, guarded_generate
    from hades_ray.guard.sampling import plain_generate
    from hades_ray.guard.stages import batch_seed

    generator_clock, judge_clocks = clocks
    results = []
    judge = RecordingJudge(judges[JUDGED[arm]]) if arm in JUDGED else None
    for clock in (generator_clock, *judge_clocks.values()):
        clock.take()
    # The arms before this one left their texts and calls in memory: the collector would scan them again
    # and again during this arm, so they are set aside from its scans.
    gc.collect()
    gc.freeze()
    with Sampler() as memory:
        began, cpu = time.perf_counter(), time.process_time()
        if args.slots and arm.endswith("guarded"):
            guard = GuardSettings(judge.threshold, args.max_retries, args.slots)
            results += guarded_generate(model, tokenizer, prompts, sampling, judge, guard, batch_seed(args.seed, 0))
        for lo in range(0, len(prompts), args.batch_size) if not results else ():
            chunk, seed_k = prompts[lo : lo + args.batch_size], batch_seed(args.seed, lo)
            if arm == "plain":
                tokens = plain_generate(model, tokenizer, chunk, sampling, seed_k)
                results += [{"tokens": t, "interventions": [], "scores": []} for t in tokens]
            else:
                guard = GuardSettings(judge.threshold, 0 if arm.endswith("scored") else args.max_retries)
                results += guarded_generate(model, tokenizer, chunk, sampling, judge, guard, seed_k)
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    out = {
        "results": results,
        "seconds": seconds,
        "cpu_seconds": cpu,  # this process's CPU time: what other jobs on shared cores do not inflate
        "rss_before_mib": memory.start,
        "peak_rss_mib": memory.peak,
        "calls": judge.calls if judge else [],
    }
    out["generator_forward_seconds"], out["generator_forwards"] = generator_clock.take()
    spent = judge_clocks[JUDGED[arm]].take() if arm in JUDGED else (0.0, 0)
    out["judge_forward_seconds"], out["judge_forwards"] = spent
    return out


def arm_figures(arm: dict, texts: list[tuple[str, str]], p_online: list, threshold: float, ppl: float) -> dict:
    words = np.concatenate(p_online) if p_online else np.zeros(0)
    tokens = sum(len(r["tokens"]) for r in arm["results"])
    events = [e for r in arm["results"] for e in r["interventions"]]
    kept = ("cpu_seconds", "generator_forwards", "generator_forward_seconds", "judge_forwards")
    kept += ("judge_forward_seconds", "rss_before_mib", "peak_rss_mib")
    return {
        "generated_content_words": int(words.size),
        **flag_figures(words, threshold),
        "perplexity": ppl,
        "distinct_1": distinct_n([g for _, g in texts], 1),
        "distinct_2": distinct_n([g for _, g in texts], 2),
        "new_tokens": tokens,
        "seconds": arm["seconds"],
        "tokens_per_s": tokens / arm["seconds"],
        **{key: arm[key] for key in kept},
        "interventions": len(events),
        "words_replaced": len(
            {(k, e["token_position"]) for k, r in enumerate(arm["results"]) for e in r["interventions"]}
        ),
        "flagged_kept_after_retries": sum(r.get("emitted_flagged", 0) for r in arm["results"]),
    }


def _fmt(value, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


ARM_ROWS = (
    ("mean p(H), generated content words (judge)", "mean_p"),
    ("90th percentile p(H) (judge)", "p90_p"),
    ("share flagged at the judge's threshold", "share_flagged"),
    ("perplexity under the generator", "perplexity"),
    ("distinct-1", "distinct_1"),
    ("distinct-2", "distinct_2"),
    ("new tokens", "new_tokens"),
    ("tokens/s", "tokens_per_s"),
    ("CPU seconds of this process", "cpu_seconds"),
    ("generator forwards (steps)", "generator_forwards"),
    ("judge forwards", "judge_forwards"),
    ("seconds in the judge's forwards", "judge_forward_seconds"),
    ("resident memory before the arm, MiB", "rss_before_mib"),
    ("peak resident memory during the arm, MiB", "peak_rss_mib"),
    ("interventions (rejected words)", "interventions"),
    ("word positions replaced", "words_replaced"),
    ("flagged words left in the text (judge only: all it flags)", "flagged_kept_after_retries"),
)
AGREEMENT_ROWS = ("lr_mean_p", "lr_share_flagged", "share_outputs_agreeing")
AGREEMENT_ROWS += ("share_agreeing_among_outputs_the_judge_flags", "word_kappa")
AGREEMENT_ROWS += ("lr_flags_where_judge_flags", "lr_flags_where_judge_does_not")
FLOOR_COLUMNS = ("arm", "overhead", "overhead in CPU time", "floor", "judge forwards per step")
FLOOR_COLUMNS += ("ms per judge forward", "ms per generator step (plain)", "steps against plain")


def _checks(checks: dict, moved: bool = False) -> str:
    """Recorded p(H) against score's, one clause per arm."""
    return "; ".join(
        f"{k} {v['max_abs_diff']:.1e} over {v['words']} words, {v['flags_differing']} flags"
        + (f", {v['unaligned']} words whose characters moved" if moved and v["unaligned"] else "")
        for k, v in checks.items()
    )


def markdown(report: dict) -> str:
    arms, det, agree = report["arms"], report["detectors"], report["agreement"]
    arm_columns = ["", NAMES["plain"], f"{NAMES['scored']} (retries 0)", *(NAMES[a] for a in ARMS[2:])]
    floors = [
        [name, f"{report[f'overhead_{name}']:.2f}x", f"{report[f'cpu_overhead_{name}']:.2f}x"]
        + [f"{f['overhead_floor']:.2f}x", f"{f['judge_forwards_per_step']:.2f}", f"{f['judge_forward_ms']:.2f}"]
        + [f"{f['generator_step_ms']:.2f}", f"{f['extra_steps']:.2f}"]
        for name, f in report["floor"].items()
    ]
    lines = [
        "# Online guard benchmark",
        "",
        f"Machine: {machine_words(report)}; torch threads {report['torch_threads']}. {report['note']}",
        f"Command: `{report['command']}`",
        "",
        f"{report['prompts']} held-out prompts ({report['prompts_skipped_too_long']} leads passed over: prompt plus "
        f"new tokens longer than the generator's context), {report['max_new_tokens']} new tokens each, sampling "
        f"{report['sampling']}, max retries {report['max_retries']}, judge thresholds {report['threshold']:.3f} "
        f"(encoder) and {report['causal_threshold']:.3f} (causal) ({report['threshold_source']}). {_batching(report)} "
        f"{_repeats(report)}",
        "",
        "Judges: the encoder, an online MiniLM span classifier with a "
        f"{report['judge_window']}-token window (one forward per judged word and per retry, all rows' words of "
        "a step in one call); the causal one, an online span classifier on the offline kit's GPT-2 with a "
        f"{report['causal_window']}-token window and stride {report['causal_stride']} (hades-ray score's "
        "windows), scored with each row's key/value cache; and, as before that cache, the same causal "
        "detector with one forward per word over its own view (`per word`); and a small causal judge (below). "
        "p(H) rows: the encoder judge's for the first three columns, the causal detector's for the next four, "
        "the small judge's (noise: a random head) for the last two.",
        "",
        *pipe_table(arm_columns, ([label, *(_fmt(arms[a][key]) for a in ARMS)] for label, key in ARM_ROWS)),
        "",
        f"Judge-only tokens equal plain `generate`'s: **{report['scored_equals_plain']}** (encoder), "
        f"**{report['causal_scored_equals_plain']}** (causal). Guard overhead (plain tokens/s / guarded "
        f"tokens/s): causal judge **{report['overhead_causal_guarded']:.2f}x**, judging alone "
        f"**{report['overhead_causal_scored']:.2f}x** (the same detector one forward per word, as before its "
        f"cache: {report['overhead_causal_word_guarded']:.2f}x, judging alone "
        f"{report['overhead_causal_word_scored']:.2f}x); encoder judge **{report['overhead_guarded']:.2f}x**, "
        f"judging alone {report['overhead_scored']:.2f}x. A judge smaller than the generator (the micro kit's "
        f"2-layer, 32-wide GPT-2 under a random head, threshold {report['small_threshold']:.3f}: the quantile "
        "that flags the share the causal judge flags, so it rejects about as often; its p(H) means nothing): "
        f"**{report['overhead_small_guarded']:.2f}x** guarded, {report['overhead_small_scored']:.2f}x judging "
        "alone.",
        "",
        "The floor: what each arm would cost if the guard added nothing to plain generation but its judge's "
        "forwards (timed by hooks on the judge's backbone) and its extra generator steps (a rejected word's "
        "tokens are drawn again, and a batch waits for its slowest prompt), at plain `generate`'s time per "
        "step (overhead in CPU time: the arm's CPU seconds over plain generation's, which the other jobs on "
        "the shared cores inflate less than wall time):",
        "",
        *pipe_table(FLOOR_COLUMNS, floors),
        "",
        *_history(report),
        "p(H) the loop recorded against `hades-ray score`'s scorer (hades_ray/detect/scorer.py) on the same "
        "text with the same judge, every judged word including the rejected ones (max |diff|, flags that "
        "differ at the judge's threshold): "
        + _checks(report["score_check"])
        + ". The causal judge's forwards extend each row's cache instead of running the whole window, so "
        "the same arithmetic rounds differently in the last bits; one view per word (causal_word) gives each "
        "word exactly `window` tokens of context, where score's windows give it between window - stride and "
        "window, so it matches score only while a text fits one window. Against the final texts (the words that "
        "stayed): "
        + _checks(report["final_text_check"], moved=True)
        + " (a word's left context decodes differently once later tokens arrive where a token ends inside "
        "a character or the tokenizer's clean-up joins spaces, so the judge saw another text there).",
        "",
        f"The causal judge on the plain texts: mean p(H) {_fmt(report['causal_on_plain']['mean_p'])}, share "
        f"flagged {_fmt(report['causal_on_plain']['share_flagged'])}.",
        "",
        "p(H) recorded by the loop against the same words scored again per word afterwards (encoder, first "
        "outputs, max |diff|): " + ", ".join(f"{k} {v:.1e}" for k, v in report["rescoring_max_abs_diff"].items()) + ".",
        "",
        f"## Independent check: the LR detector on the first {agree['guarded']['outputs']} outputs",
        "",
        *pipe_table(
            ["", "plain", "guarded"], ([k, _fmt(agree["plain"][k]), _fmt(agree["guarded"][k])] for k in AGREEMENT_ROWS)
        ),
    ]
    lo, hi = report["lr_flag_share_change_ci"]
    lines += [
        "",
        f"LR threshold {report['lr_threshold']:.3g} (stored in its folder). Change in the LR flag share, guarded "
        f"minus plain: 95% bootstrap interval over outputs [{lo:+.3f}, {hi:+.3f}].",
        "",
        "## Detectors (trained in this run)",
        "",
        f"Instances from perturbing {report['train_docs']} other leads: {det['instances']}; "
        f"perturbation {det.get('perturb_seconds', 0):.0f} s"
        + (f" (detectors reused from {det['reused_from']})." if det.get("reused_from") else "."),
        "",
        *(
            f"- {name}: validation G-Mean {_fmt(det[name]['valid'].get('gmean'))}, AUC "
            f"{_fmt(det[name]['valid'].get('auc'))}, trained in {det[name]['seconds']:.0f} s"
            for name in DETECTORS
        ),
        "",
        "## What this means, and what it does not",
        "",
        *report["reading"],
        "",
        f"Whole run: {report['wall_seconds']:.0f} s.",
    ]
    return "\n".join(lines) + "\n"


def _repeats(report: dict) -> str:
    repeats = report.get("repeats", 1)
    if repeats < 2:
        return ""
    same = all(a.get("same_each_time", True) for a in report["arms"].values())
    return (
        f"Every arm ran {repeats} times, the arms in turn; times are each arm's medians (a shared machine's "
        f"speed drifts by several percent from minute to minute), and every run gave the same tokens: **{same}**."
    )


def _batching(report: dict) -> str:
    size, slots = report["batch_size"], report.get("slots", 0)
    if not slots:
        return f"Seeds per batch of {size}: the same in every arm."
    return (
        f"Plain and judge-only arms: batches of {size}, a seed per batch, the same in every arm; guarded arms: "
        f"every prompt through {slots} slots (`guard.slots`: a slot whose prompt is done takes the next one at "
        "once) under the first batch's seed."
    )


HISTORY_ARMS = ("scored", "guarded", "causal_scored", "causal_guarded", "causal_word_scored", "causal_word_guarded")


def carried_history(path: Path) -> list[dict]:
    """The last run's history with that run's own overheads appended under its ``label``."""
    if not path.is_file():
        return []
    last = json.loads(path.read_text())
    entry = {"run": last.get("label") or "the previous run"}
    entry |= {k: round(last[f"overhead_{k}"], 2) for k in HISTORY_ARMS if f"overhead_{k}" in last}
    return [*last.get("history", []), entry]


def _history(report: dict) -> list[str]:
    """Earlier runs' overheads beside this one's (``history`` in bench_guard.json: what each run measured,
    with the commit it ran on), so before -> after stays in the results."""
    runs = report.get("history", [])
    if not runs:
        return []
    rows = [[run["run"], *(f"{run[k]:.2f}x" if k in run else "n/a" for k in HISTORY_ARMS)] for run in runs]
    rows.append(["this run", *(f"{report[f'overhead_{k}']:.2f}x" for k in HISTORY_ARMS)])
    return [
        "Before -> after (wall-clock overhead against plain `generate`, same 100 prompts; the per-word causal "
        "judge's code did not change between the last two runs, so its columns show how much the shared "
        "cores moved the figures):",
        "",
        *pipe_table(["run", *(NAMES[k] for k in HISTORY_ARMS)], rows),
        "",
    ]


def reading(report: dict) -> list[str]:
    """The plain-words reading of the figures; each sentence follows from a number in the report."""
    plain, guarded = report["arms"]["plain"], report["arms"]["guarded"]
    lr_plain, lr_guarded = report["agreement"]["plain"], report["agreement"]["guarded"]
    gmean = report["detectors"]["online"]["valid"].get("gmean", float("nan"))
    lr_valid = report["detectors"]["lr"]["valid"]
    lo, hi = report["lr_flag_share_change_ci"]
    lr_verdict = (
        "lower after guarding, and the interval excludes no change"
        if hi < 0
        else "higher after guarding, and the interval excludes no change"
        if lo > 0
        else "not distinguishable from no change (the interval spans 0)"
    )
    ppl_verdict = "lower" if guarded["perplexity"] < plain["perplexity"] else "higher"
    return [
        f"- The judge's own p(H) falls from {plain['mean_p']:.3f} to {guarded['mean_p']:.3f} (mean) and its flag "
        f"share from {plain['share_flagged']:.3f} to {guarded['share_flagged']:.3f}. This is by construction: the "
        "guard rejects exactly what this detector scores high, so the same detector judging the result is a "
        "biased measure. It shows the guard does what it says, not that the text is more faithful.",
        f"- The judge is weak: validation G-Mean {gmean:.3f} on synthetic labels (replaced words against "
        "untouched ones, from the offline kit's small MLM), not human judgments of hallucination; p(H) here "
        "means 'looks like a REPLACE substitution to this model'.",
        f"- The independent LR detector (offline features, threshold {report['lr_threshold']:.3g}) flags "
        f"{lr_plain['lr_share_flagged']:.3f} of the plain words and {lr_guarded['lr_share_flagged']:.3f} of the "
        f"guarded ones on the first {lr_guarded['outputs']} outputs: a change of "
        f"{lr_guarded['lr_share_flagged'] - lr_plain['lr_share_flagged']:+.3f}, 95% bootstrap interval over "
        f"outputs [{lo:+.3f}, {hi:+.3f}], {lr_verdict}. The LR detector is weak too (validation G-Mean "
        f"{_fmt(lr_valid.get('gmean'))}, AUC {_fmt(lr_valid.get('auc'))}).",
        f"- The two detectors {_kappa_words(lr_guarded['word_kappa'])} on which words they flag (word-level "
        f"Cohen's kappa {_fmt(lr_guarded['word_kappa'])} on guarded outputs, {_fmt(lr_plain['word_kappa'])} on "
        f"plain ones). " + _same_sets(lr_guarded),
        f"- Fluency: perplexity under the generator is {ppl_verdict} with the guard ({plain['perplexity']:.1f} -> "
        f"{guarded['perplexity']:.1f}), distinct-1/2 {plain['distinct_1']:.3f}/{plain['distinct_2']:.3f} -> "
        f"{guarded['distinct_1']:.3f}/{guarded['distinct_2']:.3f}. "
        + (
            "Replacements are drawn again from the generator's own distribution, which can favour likelier words; "
            if guarded["perplexity"] < plain["perplexity"]
            else "Resampling takes away words the generator drew, which can cost likelihood; "
        )
        + "perplexity under the generator that was steered is not a quality measure by itself.",
        f"- Cost: with the encoder judge the guard runs at {guarded['tokens_per_s']:.1f} tokens/s against "
        f"{plain['tokens_per_s']:.1f} ({report['overhead_guarded']:.2f}x slower; judging without resampling "
        f"{report['overhead_scored']:.2f}x) on 2 shared CPU cores: it costs one detector forward over the word's "
        "window per content word (and per retry), batched across prompts but not shared between words, so the "
        "ratio is at its worst here, a 4-layer generator beside a 6-layer judge. The causal judge extends each "
        "row's key/value cache by the new words' tokens, and encodes a window afresh only where a word falls "
        f"past the current one: {report['arms']['causal_guarded']['tokens_per_s']:.1f} tokens/s guarded "
        f"({report['overhead_causal_guarded']:.2f}x), {report['overhead_causal_scored']:.2f}x judging alone. "
        "All rows' new tokens of a step, cache extensions and fresh windows alike, run packed in one forward. "
        "That judge is the generator's own size (the kit's 4-layer GPT-2), so its one forward per step costs "
        f"{report['floor']['causal_scored']['judge_forward_ms']:.1f} ms against a whole generator step's "
        f"{report['floor']['causal_scored']['generator_step_ms']:.1f} ms (forward, processors, sampling), and "
        "at these sizes a "
        "forward's fixed cost dominates on a CPU: judging alone cannot cost less than "
        f"{report['floor']['causal_scored']['overhead_floor']:.2f}x here, guarding not less than "
        f"{report['floor']['causal_guarded']['overhead_floor']:.2f}x (the table above). The ratio falls toward "
        "1 + (judge forward / generator step) as the judge gets smaller than the generator: the micro judge "
        f"costs {report['overhead_small_scored']:.2f}x judging alone, but {report['overhead_small_guarded']:.2f}x "
        "guarded: with a free judge guarding still costs its steps against plain "
        f"({report['floor']['causal_guarded']['extra_steps']:.2f}x with the causal judge), so 2x needs a judge "
        "well under half a generator step and fewer or cheaper resamples. A guarded run also draws again every "
        "rejected word "
        f"({report['arms']['causal_guarded']['interventions']} here), and a batch waits for its slowest "
        "prompt; timings on a shared machine also move with its load.",
        "- Not measured: factual accuracy of the generations (no human or reference check), and any generator "
        "or detector other than the offline kit's.",
    ]


def _same_sets(figures: dict) -> str:
    share, outputs = figures["share_outputs_agreeing"], figures["outputs"]
    if not share:
        return f"None of the first {outputs} guarded outputs has the same flagged set under both."
    return (
        f"{share:.3f} of the first {outputs} guarded outputs have the same flagged set under both; of those, "
        f"{figures['agreeing_with_no_flags']:.3f} are outputs where neither flags anything."
    )


def _kappa_words(kappa: float | None) -> str:
    if kappa is None:
        return "cannot be compared"
    return "barely agree" if kappa < 0.2 else "agree weakly" if kappa < 0.4 else "agree moderately or better"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    flag = parser.add_argument
    flag("--train-docs", type=int, default=60, help="leads perturbed to train the detectors")
    flag("--prompts", type=int, default=100, help="held-out prompts")
    flag("--max-new-tokens", type=int, default=60, help="new tokens per prompt")
    flag("--max-retries", type=int, default=3, help="resamples per flagged word")
    flag("--threshold", type=float, default=None, help="judge threshold (default: the stored one)")
    flag("--top-k", type=int, default=50, help="sampling top-k, every arm")
    flag("--allow-end", action="store_true", help="let generations stop at the end token (default: full length)")
    flag("--batch-size", type=int, default=20, help="prompts per batch (one seed per batch)")
    slots = "guarded arms: rows in flight, a done row's slot taking the next prompt (guard.slots); 0: batches, as plain"
    flag("--slots", type=int, default=20, help=slots)
    flag("--repeats", type=int, default=3, help="runs of every arm, in turn; times are each arm's medians")
    flag("--label", default="", help="this run's name in the before -> after table of later runs")
    flag("--agreement-outputs", type=int, default=30, help="outputs the (slow) LR detector scores")
    flag("--threads", type=int, default=1, help="torch threads (the machine is shared)")
    flag("--seed", type=int, default=0, help="seed of the detectors and the generations")
    flag("--workdir", help="keep the perturbation and detectors here; a rerun reuses them (same --train-docs)")
    flag("--set", dest="overrides", action="append", default=[], help="config override KEY=VALUE")
    flag("--render", action="store_true", help="only rewrite bench_guard.md (and its reading) from bench_guard.json")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
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
    from hades_ray.guard.stages import context_limit
    from hades_ray.models.kit import heldout_prompts
    from hades_ray.models.registry import load_causal_lm
    from hades_ray.plan.machine import machine_facts
    from hades_ray.ray_runtime import init_ray
    from hades_ray.text.pipeline import load_pipeline

    torch.set_num_threads(args.threads)
    laps = Laps()
    machine = machine_facts()
    note = "Offline kit models: built."
    if not kit_or_micro():
        note = "Offline kit not built: micro random-weight models stand in (every figure is noise)."
    config = load_config(
        overrides=[
            f"seed={args.seed}",
            "perturb.rank.num_candidates=2",  # the detectors need labels, not the best of 20 candidates
            "detect.epochs=3",
            # The judge runs one forward per generated content word: a 32-token left context halves its
            # cost against 64, and keeps the run within ~10 min on 2 shared cores.
            "detect.window=32",
            "detect.feature_window=32",
            *args.overrides,
        ]
    )
    init_ray(config.ray.address, config.ray.num_cpus)
    tokenizer, model = load_causal_lm(config.models.causal_lm, "cpu")
    limit = (context_limit(model) or 10**9) - args.max_new_tokens
    fits = lambda p: len(tokenizer(p)["input_ids"]) <= limit  # noqa: E731
    nlp = load_pipeline(config.language, config.spacy_model)
    prompts, too_long = heldout_prompts(ENWIKI, nlp, args.train_docs, args.prompts, fits)
    with storage.scratch_folder("bench_guard_") as tmp:
        work = Path(args.workdir) if args.workdir else tmp
        storage.makedirs(work)
        detectors = trained_detectors(config, work, args.train_docs)
        detectors["small"] = small_judge(work, config.detect.window)
        report = measure(args, config, prompts, detectors, (tokenizer, model))
    report |= {"note": note, "train_docs": args.train_docs, "detectors": detectors, "seed": args.seed}
    report["machine"] = machine  # read before the arms ran
    report["prompts_skipped_too_long"] = too_long
    report["command"] = job_command()
    report["wall_seconds"] = laps.lap()
    report["reading"] = reading(report)
    report["label"] = args.label
    report["history"] = carried_history(RESULTS / "bench_guard.json")
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


def lr_agreement(judge, lr_dir: str, config, texts: list[tuple[str, str]], p_online: list, t_lr: float) -> tuple:
    """The encoder judge's p(H) scored again per word on the first outputs (its largest difference from
    what the loop recorded), the LR detector's p(H) of the same words, and the two detectors' agreement."""
    from hades_ray.detect.detector import Detector

    rescored = online_p(judge.scorer, texts, lang=ENGLISH)  # aligned word for word with the LR detector's
    diffs = (float(abs(np.sort(a) - np.sort(b)).max()) for a, b in zip(rescored, p_online) if len(a) == len(b) > 0)
    p_lr = detector_p(Detector.open(lr_dir), config.detect, texts, lang=ENGLISH)
    return max(diffs, default=0.0), p_lr, flag_agreement(rescored, p_lr, judge.threshold, t_lr)


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

    judge = ViewJudge(scorer("online"), args.threshold, "content", lang=config.lang)
    judges = {
        "online": judge,
        "causal": CausalJudge(scorer("causal"), args.threshold, "content", lang=config.lang),
        "causal_word": ViewJudge(scorer("causal"), args.threshold, "content", lang=config.lang),
        "small": CausalJudge(scorer("small"), 0.5, "content", lang=config.lang),
    }
    sampling = Sampling(max_new_tokens=args.max_new_tokens, top_k=args.top_k, no_end=not args.allow_end)
    texts_in = [p["prompt"] for p in prompts]
    arms = run_arms(model, tokenizer, judges, texts_in, sampling, args)
    for r, prompt in zip(arms["plain"]["results"], texts_in):
        r["generation"] = TokenText(tokenizer, tokenizer(prompt)["input_ids"]).generated(r["tokens"])
    plain_tokens = [a["tokens"] for a in arms["plain"]["results"]]
    same = {n: plain_tokens == [a["tokens"] for a in arms[n]["results"]] for n in ("scored", "causal_scored")}
    # The loop already scored every word online with its left context; plain's words are the judge-only
    # arm's when their tokens match (checked above), else they are scored here.
    recorded = {name: [np.array([w["p"] for w in r["scores"]]) for r in arms[name]["results"]] for name in ARMS[1:]}
    figures, agree, drift, lr_scores, checks, finals = {}, {}, {}, {}, {}, {}
    t_lr, k = Detector.open(detectors["lr"]["dir"]).threshold, args.agreement_outputs
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
            lr_dir = detectors["lr"]["dir"]
            drift[name], lr_scores[name], agree[name] = lr_agreement(
                judge, lr_dir, config, texts[:k], p_online[:k], t_lr
            )
    causal_on_plain = np.concatenate(recorded["causal_scored"]) if same["causal_scored"] else np.zeros(0)
    causal_flags = (causal_on_plain >= judges["causal"].threshold).mean() if causal_on_plain.size else None
    return {
        "lr_flag_share_change_ci": flag_share_change_ci(lr_scores["plain"], lr_scores["guarded"], t_lr, args.seed),
        "rescoring_max_abs_diff": drift,
        "score_check": checks,
        "final_text_check": finals,
        "arms": figures,
        "agreement": agree,
        "scored_equals_plain": same["scored"],
        "causal_scored_equals_plain": same["causal_scored"],
        "causal_on_plain": {
            "mean_p": float(causal_on_plain.mean()) if causal_on_plain.size else None,
            "share_flagged": None if causal_flags is None else float(causal_flags),
        },
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
