"""Where the guard's time goes: plain ``generate`` against the guarded loop on the same held-out prompts,
in CPU time of this process, with a cProfile of the guarded run. ``--detector``: an online causal detector
folder (``jobs/bench_guard.py --workdir W`` leaves one in W/causal). Prints the generator's steps, the
interventions, both CPU times and the profile's top entries; one torch thread, as bench_guard runs.
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jobs.bench_common import ENWIKI, ForwardClock, options  # noqa: E402


def main(argv=None) -> int:
    args = options(__doc__, {
        "--detector": (None, "online causal detector folder (the judge)", {"required": True}),
        "--prompts": (20, "held-out prompts"),
        "--batch": (0, "plain generate's batch and the guard's slots (0: all prompts at once)"),
        "--new-tokens": (60, "new tokens per prompt"),
        "--retries": (3, "resamples per flagged word (0: judging alone)"),
        "--seed": (7, "the batch's seed"),
        "--stride": (0, "the judge's window stride (0: score.stride)"),
        "--top": (30, "profile entries to print (0: time without the profiler)"),
    }, argv)  # fmt: skip

    import torch

    from hades_ray.config import load_config
    from hades_ray.detect.detector import Detector
    from hades_ray.detect.incremental import CausalJudge
    from hades_ray.guard.loop import GuardSettings, guarded_generate
    from hades_ray.guard.sampling import Sampling, plain_generate, prepare_tokenizer
    from hades_ray.guard.stages import prompt_fits
    from hades_ray.models.registry import load_causal_lm
    from hades_ray.text.pipeline import load_pipeline
    from hades_ray.models.kit import heldout_prompts

    torch.set_num_threads(1)
    config = load_config()
    tokenizer, model = load_causal_lm(config.models.causal_lm, "cpu")
    prepare_tokenizer(tokenizer)
    fits = lambda p: prompt_fits(model, tokenizer, p, args.new_tokens)  # noqa: E731
    nlp = load_pipeline(config.language, config.spacy_model)
    prompts = [p["prompt"] for p in heldout_prompts(ENWIKI, nlp, 60, args.prompts, fits)[0]]
    scorer = Detector.open(args.detector).scorer("online", stride=args.stride or config.score.stride)
    judge = CausalJudge(scorer, None, "content", lang=config.lang)
    sampling = Sampling(max_new_tokens=args.new_tokens, top_k=50, no_end=True)
    steps = ForwardClock(model)  # counts the generator's forwards (one per step, plus the prompt's)
    began = time.process_time()
    batch = args.batch or len(prompts)
    for lo in range(0, len(prompts), batch):
        plain_generate(model, tokenizer, prompts[lo : lo + batch], sampling, args.seed + lo)
    plain, plain_steps = time.process_time() - began, steps.take()[1]
    guard = GuardSettings(judge.threshold, args.retries, batch)
    profile, began = cProfile.Profile(), time.process_time()
    if args.top:
        profile.enable()
    out = guarded_generate(model, tokenizer, prompts, sampling, judge, guard, args.seed)
    profile.disable()
    guarded, guarded_steps = time.process_time() - began, steps.take()[1]
    interventions = sum(len(r["interventions"]) for r in out)
    print(f"{len(prompts)} prompts x {args.new_tokens} tokens, {batch} at a time, retries {args.retries}")
    print(f"judge {args.detector}")
    print(f"plain generate: {plain:.2f} CPU s, {plain_steps} generator forwards")
    profiled = " (profiled)" if args.top else ""
    print(f"guarded: {guarded:.2f} CPU s{profiled}, {guarded_steps} generator forwards, {interventions} interventions")
    print(f"ratio: {guarded / plain:.2f}x")
    if args.top:
        pstats.Stats(profile).sort_stats("cumulative").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
