"""Arms of a guard benchmark (jobs/bench_guard.py): plain ``generate``, and the guarded loop judging only
(``max_retries=0``: it must draw plain's tokens) or guarding, over the same batches and seeds, timed and
run in turn several times; each arm's figures; and a second detector's agreement with the judge.

An arm is named by its mode's suffix: ``plain``, ``..scored`` (judging only) or ``..guarded``."""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass

import numpy as np

from hades_ray.guard.metrics import detector_p, distinct_n, flag_agreement, flag_figures, online_p

TIMES = ("seconds", "cpu_seconds", "generator_forward_seconds", "judge_forward_seconds")
KEPT = ("cpu_seconds", "generator_forwards", "generator_forward_seconds", "judge_forwards")
KEPT += ("judge_forward_seconds", "rss_before_mib", "peak_rss_mib")


@dataclass(frozen=True)
class ArmSettings:
    """How every arm runs: ``slots`` rows in flight for a guarded arm (0: batches of ``batch_size``, a seed
    each, as plain), ``repeats`` runs of every arm in turn."""

    max_retries: int = 3
    batch_size: int = 20
    slots: int = 20
    repeats: int = 3
    seed: int = 0


def run_arms(arms: dict, model, tokenizer, judges: dict, prompts: list[str], sampling, settings: ArmSettings,
             clocks: tuple, memory, before=None) -> dict:  # fmt: skip
    """``arms`` (name -> its judge's name in ``judges``, None for plain) over the same prompts: per arm its
    ``results`` (tokens, interventions, scores), judge ``calls``, times and forwards. ``clocks``: the
    generator's forward clock and one per judge (``take() -> (seconds, forwards)``); ``memory()``: a
    context that samples memory (``start``, ``peak``); ``before(arm, done)`` runs ahead of each arm. The
    times are each arm's medians over the repeats, the rest the first run's; ``same_each_time`` says
    whether every run drew the same tokens."""
    done: dict = {}
    for _ in range(settings.repeats):
        for arm, judge in arms.items():
            if before:
                before(arm, done)
            run = run_arm(arm, judge and judges[judge], model, tokenizer, prompts, sampling, settings,
                          (clocks[0], clocks[1], judge), memory)  # fmt: skip
            first = done.setdefault(arm, run | {f"{key}_each": [] for key in TIMES} | {"same_each_time": True})
            for key in TIMES:
                first[f"{key}_each"].append(run[key])
            first["same_each_time"] &= [r["tokens"] for r in run["results"]] == [r["tokens"] for r in first["results"]]
    for arm in done.values():
        arm |= {key: float(np.median(arm[f"{key}_each"])) for key in TIMES}
    return done


def run_arm(arm: str, judge, model, tokenizer, prompts: list[str], sampling, settings: ArmSettings, clocks,
            memory) -> dict:  # fmt: skip
    """One timed run of one arm (``judge`` None for plain); ``clocks``: the generator's, the judges' and
    this arm's judge's name."""
    from hades_ray.guard.judge import RecordingJudge
    from hades_ray.guard.loop import GuardSettings, guarded_generate
    from hades_ray.guard.sampling import plain_generate
    from hades_ray.guard.stages import batch_seed

    generator_clock, judge_clocks, judge_name = clocks
    results, judge = [], RecordingJudge(judge) if judge is not None else None
    for clock in (generator_clock, *judge_clocks.values()):
        clock.take()
    # The arms before this one left their texts and calls in memory: the collector would scan them again
    # and again during this arm, so they are set aside from its scans.
    gc.collect()
    gc.freeze()
    with memory() as rss:
        began, cpu = time.perf_counter(), time.process_time()
        if settings.slots and arm.endswith("guarded"):
            guard = GuardSettings(judge.threshold, settings.max_retries, settings.slots)
            seed = batch_seed(settings.seed, 0)
            results += guarded_generate(model, tokenizer, prompts, sampling, judge, guard, seed)
        for lo in range(0, len(prompts), settings.batch_size) if not results else ():
            chunk, seed = prompts[lo : lo + settings.batch_size], batch_seed(settings.seed, lo)
            if judge is None:
                tokens = plain_generate(model, tokenizer, chunk, sampling, seed)
                results += [{"tokens": t, "interventions": [], "scores": []} for t in tokens]
            else:
                guard = GuardSettings(judge.threshold, 0 if arm.endswith("scored") else settings.max_retries)
                results += guarded_generate(model, tokenizer, chunk, sampling, judge, guard, seed)
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    # cpu_seconds: this process's CPU time, what other jobs on shared cores do not inflate
    out = {"results": results, "seconds": seconds, "cpu_seconds": cpu, "rss_before_mib": rss.start}
    out |= {"peak_rss_mib": rss.peak, "calls": judge.calls if judge else []}
    out["generator_forward_seconds"], out["generator_forwards"] = generator_clock.take()
    spent = judge_clocks[judge_name].take() if judge is not None else (0.0, 0)
    out["judge_forward_seconds"], out["judge_forwards"] = spent
    return out


def arm_figures(arm: dict, texts: list[tuple[str, str]], p_online: list, threshold: float, ppl: float) -> dict:
    """An arm's figures: the judge's p(H) of its generated content words (``p_online``, per text) and the
    share flagged at ``threshold``, perplexity ``ppl``, distinct-1/2 of its generations (``texts``: (prompt,
    generation) pairs), tokens and tokens/s, its times and forwards, and what the guard changed."""
    words = np.concatenate(p_online) if p_online else np.zeros(0)
    tokens = sum(len(r["tokens"]) for r in arm["results"])
    replaced = {(k, e["token_position"]) for k, r in enumerate(arm["results"]) for e in r["interventions"]}
    return {
        "generated_content_words": int(words.size),
        **flag_figures(words, threshold),
        "perplexity": ppl,
        "distinct_1": distinct_n([g for _, g in texts], 1),
        "distinct_2": distinct_n([g for _, g in texts], 2),
        "new_tokens": tokens,
        "seconds": arm["seconds"],
        "tokens_per_s": tokens / arm["seconds"],
        **{key: arm[key] for key in KEPT},
        "interventions": sum(len(r["interventions"]) for r in arm["results"]),
        "words_replaced": len(replaced),
        "flagged_kept_after_retries": sum(r.get("emitted_flagged", 0) for r in arm["results"]),
    }


def lr_agreement(judge, detector, settings, texts: list[tuple[str, str]], p_online: list, *, lang) -> tuple:
    """The judge's p(H) of ``texts`` scored again per word (its largest difference from ``p_online``, what
    the loop recorded), ``detector``'s p(H) of the same words (``settings``: the detect section), and the
    two detectors' agreement at their thresholds."""
    rescored = online_p(judge.scorer, texts, lang=lang)  # aligned word for word with the detector's
    diffs = (float(abs(np.sort(a) - np.sort(b)).max()) for a, b in zip(rescored, p_online) if len(a) == len(b) > 0)
    p_lr = detector_p(detector, settings, texts, lang=lang)
    return max(diffs, default=0.0), p_lr, flag_agreement(rescored, p_lr, judge.threshold, detector.threshold)
