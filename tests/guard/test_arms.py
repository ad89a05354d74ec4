"""A guard benchmark's arms (hades_ray/guard/arms.py) on the micro GPT-2: the judge-only arm draws plain
``generate``'s tokens, the guard's arm keeps no flagged word while retries remain, every repeat draws the
same tokens, and an arm's figures count its tokens and what the guard changed."""

from __future__ import annotations

import numpy as np

from hades_ray.guard.arms import ArmSettings, arm_figures, run_arms
from hades_ray.guard.sampling import Sampling
from jobs.bench_common import ForwardClock, Sampler
from tests.guard.test_guard import PROMPTS, LetterJudge

ARMS = {"plain": None, "scored": "letter", "guarded": "letter"}


class NoClock:
    """A judge without a model: no forwards to time."""

    def take(self) -> tuple[float, int]:
        return 0.0, 0


def test_arms_draw_plain_tokens_when_judging_and_replace_flagged_words_when_guarding(generator):
    tokenizer, model = generator
    judges = {"letter": LetterJudge("e", threshold=0.5)}
    sampling = Sampling(max_new_tokens=6, top_k=50, no_end=True)
    settings = ArmSettings(max_retries=3, batch_size=2, slots=2, repeats=2, seed=0)
    seen = []
    clocks = (ForwardClock(model), {"letter": NoClock()})
    before = lambda arm, done: seen.append((arm, len(done)))  # noqa: E731
    arms = run_arms(ARMS, model, tokenizer, judges, PROMPTS, sampling, settings, clocks, Sampler, before=before)
    assert seen == [("plain", 0), ("scored", 1), ("guarded", 2), ("plain", 3), ("scored", 3), ("guarded", 3)]
    tokens = {name: [r["tokens"] for r in arm["results"]] for name, arm in arms.items()}
    assert tokens["scored"] == tokens["plain"] and all(len(t) == 6 for t in tokens["plain"])
    assert all(arm["same_each_time"] and len(arm["seconds_each"]) == 2 for arm in arms.values())
    assert arms["plain"]["calls"] == [] and arms["scored"]["calls"] and arms["plain"]["generator_forwards"] > 0
    assert sum(len(r["interventions"]) for r in arms["scored"]["results"]) == 0

    p = [np.array([w["p"] for w in r["scores"]]) for r in arms["guarded"]["results"]]
    texts = [(prompt, "") for prompt in PROMPTS]
    figures = arm_figures(arms["guarded"], texts, p, 0.5, 12.0)
    assert figures["new_tokens"] == 6 * len(PROMPTS) and figures["perplexity"] == 12.0
    assert figures["generated_content_words"] == sum(len(x) for x in p)
    assert figures["words_replaced"] <= figures["interventions"] and figures["judge_forwards"] == 0
    assert figures["tokens_per_s"] == figures["new_tokens"] / arms["guarded"]["seconds"]


def test_an_arm_without_words_has_no_p_figures():
    arm = {"results": [{"tokens": [1, 2], "interventions": [{"token_position": 0}] * 2}], "seconds": 0.5}
    arm |= {key: 0 for key in ("cpu_seconds", "generator_forwards", "generator_forward_seconds", "judge_forwards")}
    arm |= {key: 0 for key in ("judge_forward_seconds", "rss_before_mib", "peak_rss_mib")}
    figures = arm_figures(arm, [("a", "b c b")], [], 0.5, 3.0)
    assert figures["mean_p"] is None and figures["generated_content_words"] == 0
    assert (figures["interventions"], figures["words_replaced"], figures["tokens_per_s"]) == (2, 1, 4.0)
    assert figures["distinct_1"] == 2 / 3
