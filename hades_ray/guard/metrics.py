"""What a guarded generation is measured by (jobs/bench_guard.py reports them): p(H) of the generated
content words by an online judge and by an offline detector, the two detectors' agreement on which words
they flag and a bootstrap interval of a flag share's change, the generations' perplexity under their
generator and distinct-n, the recorded p(H) against ``hades-ray score`` on the final text, and the cost
floor of a guarded arm against plain ``generate``.

A text here is a ``(prompt, generation)`` pair; every per-text list follows the texts' order.
"""

from __future__ import annotations

import math

import numpy as np

from hades_ray.text.languages import Language


def generated_words(prompt: str, generation: str, *, lang: Language) -> tuple[list[str], list[int]]:
    """The detector words of prompt + generation (the units ``hades-ray score`` and the guard judge), and
    the indices of the generated content words among them."""
    from hades_ray.detect.judged_words import is_judged
    from hades_ray.text.words import word_spans

    text = prompt + generation
    found = word_spans(text, lang)
    judged = [is_judged(text[a:b], "content", lang=lang) for a, b in found]
    picked = [k for k, (a, _) in enumerate(found) if a >= len(prompt) and judged[k]]
    return [text[a:b] for a, b in found], picked


def generated_items(
    texts: list[tuple[str, str]], *, lang: Language
) -> tuple[list[tuple[list[str], int, int]], np.ndarray]:
    """(words, word index, text) of every generated content word of ``texts``, and each one's text."""
    found = []
    for k, (prompt, generation) in enumerate(texts):
        words, picked = generated_words(prompt, generation, lang=lang)
        found += [(words, i, k) for i in picked]
    return found, np.array([k for *_, k in found], dtype=int)


def online_p(scorer, texts: list[tuple[str, str]], *, lang: Language) -> list[np.ndarray]:
    """An online ``Scorer``'s p(H) of every generated content word, each from its left context only (one
    batched ``score_spans`` call), per text."""
    found, owners = generated_items(texts, lang=lang)
    p = scorer.score_spans([{"words": words, "start": i, "end": i} for words, i, _ in found])
    return [p[owners == k] for k in range(len(texts))]


def detector_p(detector, settings, texts: list[tuple[str, str]], *, lang: Language) -> list[np.ndarray]:
    """A ``Detector``'s p(H) of the same words through ``score_instances`` with ``settings`` (the config's
    ``detect`` section): an offline detector sees both sides of each word, as it was trained."""
    from hades_ray.io.hades_format import Instance

    found, owners = generated_items(texts, lang=lang)
    instances = [Instance(words, i, i, -1, {"id": f"{k}#{i}", "doc_id": str(k)}) for words, i, k in found]
    p, _ = detector.score_instances(instances, settings)
    return [p[owners == k] for k in range(len(texts))]


def flag_figures(p: np.ndarray, threshold: float) -> dict:
    """Mean and 90th percentile p(H) of some words and the share at or above ``threshold`` (None for none)."""
    return {
        "mean_p": float(p.mean()) if p.size else None,
        "p90_p": float(np.percentile(p, 90)) if p.size else None,
        "share_flagged": float((p >= threshold).mean()) if p.size else None,
    }


def matched_threshold(reference_p: list[float], other_p: list[float], threshold: float) -> float:
    """The threshold at which a second judge flags the share of words that the reference judge flags at
    ``threshold`` (the quantile of its own p(H)): the two then reject about as often, so their costs compare."""
    share = np.mean([p >= threshold for p in reference_p])
    return float(np.quantile(other_p, 1 - share))


def generation_perplexity(model, tokenizer, prompts: list[str], token_lists: list[list[int]]) -> float:
    """exp(mean negative log-likelihood) of all generated tokens given their prompts (token-weighted)
    under the causal LM ``model``."""
    import torch

    nll, count = 0.0, 0
    for prompt, tokens in zip(prompts, token_lists):
        prompt_ids = tokenizer(prompt)["input_ids"]
        ids = torch.tensor([prompt_ids + tokens])
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0, :-1].float()
        logp = torch.log_softmax(logits, dim=-1)
        targets = ids[0, 1:]
        picked = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)[len(prompt_ids) - 1 :]
        nll -= float(picked.sum())
        count += len(tokens)
    return math.exp(nll / max(count, 1))


def distinct_n(texts: list[str], n: int) -> float:
    """Unique word n-grams over all n-grams of the texts (lower-cased whitespace words)."""
    grams = [tuple(ws[i : i + n]) for t in texts for ws in [t.lower().split()] for i in range(len(ws) - n + 1)]
    return len(set(grams)) / max(len(grams), 1)


def flag_agreement(p_a: list[np.ndarray], p_b: list[np.ndarray], t_a: float, t_b: float) -> dict:
    """How two detectors (a, the judge; b, a second opinion) agree on the same words of the same texts:
    texts whose flagged words they agree on exactly (both flag the same set, empty sets included), and the
    word-level figures behind it (Cohen's kappa of the flags, b's flag share where a flags and where not)."""
    from sklearn.metrics import cohen_kappa_score

    same = [set(np.flatnonzero(a >= t_a)) == set(np.flatnonzero(b >= t_b)) for a, b in zip(p_a, p_b)]
    empty = [s and not (a >= t_a).any() for s, a in zip(same, p_a)]
    a, b = np.concatenate(p_a) >= t_a, np.concatenate(p_b) >= t_b
    flagged_any = [bool((x >= t_a).any()) for x in p_a]
    return {
        "outputs": len(same),
        "agreeing_with_no_flags": float(sum(empty) / sum(same)) if any(same) else None,
        "share_outputs_agreeing": float(np.mean(same)) if same else None,
        "share_agreeing_among_outputs_the_judge_flags": (
            float(np.mean([s for s, f in zip(same, flagged_any) if f])) if any(flagged_any) else None
        ),
        "words": int(a.size),
        "word_kappa": float(cohen_kappa_score(a, b)) if a.size and len(set(a) | set(b)) > 1 else None,
        "lr_flags_where_judge_flags": float(b[a].mean()) if a.any() else None,
        "lr_flags_where_judge_does_not": float(b[~a].mean()) if (~a).any() else None,
        "lr_mean_p": float(np.concatenate(p_b).mean()) if a.size else None,
        "lr_share_flagged": float(b.mean()) if a.size else None,
    }


def flag_share_change_ci(before: list, after: list, threshold: float, seed: int, rounds: int = 2000) -> list:
    """95% bootstrap interval of the flag share at ``threshold`` after minus before, resampling texts (the
    same prompts on both sides: ``before[k]`` and ``after[k]`` are one prompt's words' p(H))."""
    rng = np.random.default_rng(seed)
    counts = [np.array([[(x >= threshold).sum(), len(x)] for x in side]) for side in (before, after)]
    changes = []
    for _ in range(rounds):
        pick = rng.integers(0, len(before), len(before))
        shares = [c[pick, 0].sum() / max(c[pick, 1].sum(), 1) for c in counts]
        changes.append(shares[1] - shares[0])
    return [float(np.percentile(changes, 2.5)), float(np.percentile(changes, 97.5))]


def final_text_check(scorer, texts: list[str], results: list[dict], threshold: float, *, lang: Language) -> dict:
    """The words a guarded generation kept, as the loop recorded them (``results[k]["scores"]``, characters
    in ``results[k]["generation"]``), against what ``scorer`` (a ``Scorer``: ``hades-ray score``'s) gives
    the final ``texts``: max |diff| and how many flags differ at ``threshold``. A word is found by its
    characters; ``unaligned`` counts recorded words whose characters moved (a token that ends inside a
    character decodes differently before the next token arrives)."""
    from hades_ray.score.words import Targets, find_targets

    diffs, flips, unaligned = [0.0], 0, 0
    jobs = []
    for text, result in zip(texts, results):
        t = find_targets(text, "all", lang=lang)
        shift = len(text) - len(result["generation"])
        starts = {t.starts[f]: f for f in t.first}
        mine = {}
        for w in result["scores"]:
            start = shift + w["start"]
            if start in starts and text[start : shift + w["end"]] == w["word"]:
                mine[start] = w["p"]
            else:
                unaligned += 1
        first = [starts[s] for s in sorted(mine)]
        jobs.append((Targets(t.words, t.starts, t.ends, first, first), [mine[s] for s in sorted(mine)]))
    for (_, recorded), p in zip(jobs, scorer.score([t for t, _ in jobs])):
        for value, got in zip(p, recorded):
            diffs.append(abs(float(value) - got))
            flips += (float(value) >= threshold) != (got >= threshold)
    return {"words": len(diffs) - 1, "max_abs_diff": max(diffs), "flags_differing": flips, "unaligned": unaligned}


def cost_floor(plain: dict, arm: dict) -> dict:
    """What an arm would cost if the guard added nothing but its judge's forwards and its extra steps:
    plain generation's time per generator forward times the arm's generator forwards, plus the time its
    judge's forwards took, over plain generation's time. Also the judge's forwards per generator forward
    and their mean time against a generator forward's (plain ``generate``, whole step). Each arm gives
    ``seconds``, ``generator_forwards``, ``judge_forwards`` and ``judge_forward_seconds``."""
    step = plain["seconds"] / plain["generator_forwards"]
    floor = (step * arm["generator_forwards"] + arm["judge_forward_seconds"]) / plain["seconds"]
    judge_ms = 1000 * arm["judge_forward_seconds"] / max(arm["judge_forwards"], 1)
    return {
        "overhead_floor": floor,
        "judge_forwards_per_step": arm["judge_forwards"] / arm["generator_forwards"],
        "judge_forward_ms": judge_ms,
        "generator_step_ms": 1000 * step,
        "extra_steps": arm["generator_forwards"] / plain["generator_forwards"],
    }
