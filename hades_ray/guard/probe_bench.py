"""The probe beside the span classifier: the paper's metrics on one HaDes-format test split (Tables 2-3
form, ``evaluate``'s own numbers), what judging costs ``model.generate`` per generated token against
plain generation (the probe reads the generator's states; the span classifier's stopping criterion runs
its own backbone over the text), and what the guard costs against plain sampling with the same prompts,
settings and seed, with nothing flagged and with words taken back.
"""

from __future__ import annotations

import math
import time


def compare_quality(folders: dict[str, str], test_path, config=None) -> dict[str, dict]:
    """``{name: evaluate's metrics}`` of each detector folder on the labelled file ``test_path``, scored in
    this process under ``config`` (default: each detector's own training config)."""
    from hades_ray.detect.detector import Detector
    from hades_ray.detect.score_job import evaluate_file
    from hades_ray.pipeline.executor import Executor

    out = {}
    for name, folder in folders.items():
        detector = Detector.open(folder)
        out[name] = evaluate_file(detector, test_path, config or detector.config(), Executor(kind="local"))
    return out


def generation_cost(model, tokenizer, prompts: list[str], watchers: dict, new_tokens: int = 32, repeats: int = 3):
    """Seconds per generated token of greedy ``generate`` over ``prompts`` (each exactly ``new_tokens``
    long), plain and with each of ``watchers`` (name -> a function giving a fresh ``StoppingCriteria``,
    closed afterwards where it has ``close``): ``{name: {"s_per_token", "ratio"}}``, the best of
    ``repeats`` runs each after one warm-up, ``ratio`` against plain generation."""
    plain = _per_token(model, tokenizer, prompts, None, new_tokens, repeats)
    out = {"plain": {"s_per_token": plain, "ratio": 1.0}}
    for name, make in watchers.items():
        cost = _per_token(model, tokenizer, prompts, make, new_tokens, repeats)
        out[name] = {"s_per_token": cost, "ratio": cost / plain}
    return out


def _per_token(model, tokenizer, prompts, make, new_tokens: int, repeats: int) -> float:
    import torch
    from transformers import StoppingCriteriaList

    best = math.inf
    for run in range(repeats + 1):  # the first run warms up (kernels, spaCy, caches) and is not counted
        seconds, tokens = 0.0, 0
        for prompt in prompts:
            criteria = make() if make else None
            inputs = tokenizer(prompt, return_tensors="pt", return_token_type_ids=False).to(model.device)
            started = time.perf_counter()
            out = model.generate(**inputs, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                                 pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
                                 stopping_criteria=StoppingCriteriaList([criteria] if criteria else []))  # fmt: skip
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            seconds += time.perf_counter() - started
            tokens += out.shape[1] - inputs["input_ids"].shape[1]
            getattr(criteria, "close", lambda: None)()
        if run:
            best = min(best, seconds / max(tokens, 1))
    return best


def random_probe_and_span(folder, generator: str, layer: int = -1, span_window: int = 160) -> tuple[str, str]:
    """A probe on ``generator`` (random head, its context less ``POSITION_MARGIN`` as its window) and an
    online span classifier on the same backbone with a ``span_window``-token window, under ``folder``: the
    two ways of judging a generation, for timing (their heads' weights do not change the cost)."""
    from pathlib import Path

    from hades_ray.detect.probe import POSITION_MARGIN, generator_config
    from hades_ray.detect.synthetic import random_detector
    from hades_ray.perturb.packing import config_positions

    window = config_positions(generator_config(generator)) - POSITION_MARGIN
    probe = random_detector(Path(folder) / "probe", generator, "online", window, layer=layer, probe=True)
    return probe, random_detector(Path(folder) / "span", generator, "online", span_window)


def guard_cost(model, tokenizer, prompts: list[str], judges: dict, sampling, repeats: int = 3, seed: int = 0):
    """Seconds per kept token of ``guarded_generate`` over ``prompts`` (one batch) with each judge of
    ``judges`` (name -> ``(judge, max_retries)``), against ``plain_generate`` with the same ``sampling`` and
    ``seed``: ``{name: {"s_per_token", "ratio", "words_taken_back", "ms_per_word_taken_back"}}``, the best of
    ``repeats`` runs after one warm-up. A word taken back costs the steps it is drawn again in: its time is
    the arm's time beyond plain generation's for the same kept tokens, per word taken back."""
    from hades_ray.guard.loop import GuardSettings, guarded_generate
    from hades_ray.guard.sampling import plain_generate

    def plain() -> tuple[int, int]:
        return sum(len(t) for t in plain_generate(model, tokenizer, prompts, sampling, seed)), 0

    def guarded(judge, retries: int):
        def run() -> tuple[int, int]:
            settings = GuardSettings(judge.threshold, retries)
            got = guarded_generate(model, tokenizer, prompts, sampling, judge, settings, seed)
            return sum(len(g["tokens"]) for g in got), sum(len(g["interventions"]) for g in got)

        return run

    base, _, _ = _best(plain, repeats)
    out = {"plain": {"s_per_token": base, "ratio": 1.0, "words_taken_back": 0, "ms_per_word_taken_back": None}}
    for name, (judge, retries) in judges.items():
        cost, tokens, taken = _best(guarded(judge, retries), repeats)
        extra = 1e3 * (cost - base) * tokens / taken if taken else None
        out[name] = {"s_per_token": cost, "ratio": cost / base, "words_taken_back": taken}
        out[name]["ms_per_word_taken_back"] = extra
    return out


def _best(run, repeats: int) -> tuple[float, int, int]:
    """(the best seconds per kept token of ``repeats`` timed calls of ``run`` after a warm-up, its kept
    tokens, its words taken back); ``run`` returns (kept tokens, words taken back), the same every call."""
    best, tokens, taken = math.inf, 0, 0
    for k in range(repeats + 1):
        started = time.perf_counter()
        tokens, taken = run()
        if k:
            best = min(best, (time.perf_counter() - started) / max(tokens, 1))
    return best, tokens, taken
