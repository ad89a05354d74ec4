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
from hades_ray.guard.report import ARMS, JUDGED, carried_history, markdown, reading
from hades_ray.train.detector_set import trained_detectors
from jobs.bench_common import ENWIKI, RESULTS, ForwardClock, Sampler, job_command, kit_or_micro, machine_words
from jobs.bench_common import options, write_results

FOLDER = {"online": "online", "causal": "causal", "causal_word": "causal", "small": "small"}  # each judge's detector
SMALL_MATCHED = ("causal_scored", "small_scored")  # the small judge's threshold flags the first's share on it


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
        write_results("bench_guard", report, markdown(report, machine_words(report)))
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
    write_results("bench_guard", report, markdown(report, machine_words(report)))
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
