"""Decision margins: how far the floats behind each discrete decision of a golden job could move before
the decision flips, in units of the stated tolerance (tests/golden/content.py). A golden decision has a
margin above 1: two machines whose floats agree within the tolerance take it the same way.

Two kinds of decisions are checked:

- inside the models, while a job runs in this process (``--executor local``): REPLACE's choice of a
  token (``hades_ray.perturb.replace.choose_tokens``: top-k membership, the inverse-CDF draw, greedy's
  argmax) and every ``torch.multinomial`` draw (``generate`` and the guarded loop sample with it);
- from a job's outputs, where the floats that decided are written beside the decision: the candidate
  RANK kept (lowest perplexity), a word's label at a threshold (p(H) against it).

``torch.multinomial`` with one sample is ``argmax(p / q)`` with ``q ~ Exp(1)`` drawn from the same
generator (ATen's Distributions.cpp); the recorder draws ``q`` from a copy of the generator's state,
checks that the argmax is the draw torch made, and measures the gap between the two largest ratios.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field

import numpy as np
import torch

from tests.golden.content import ATOL, RTOL


def _motion(value: float) -> float:
    """How far one float may move under the tolerance."""
    return ATOL + RTOL * abs(value)


def _probability_motion(p: float) -> float:
    """How far a probability may move: it is computed as a sigmoid or softmax of logits z that move by
    RTOL relative, which moves p by p (1 - p) |z| RTOL (the smaller of p and 1 - p to relative
    precision, not p itself: 1 - 1e-9 is not within RTOL of 1)."""
    p = min(max(p, 0.0), 1.0)
    z = abs(math.log(p / (1 - p))) if 0.0 < p < 1.0 else 50.0
    return ATOL + RTOL * p * (1 - p) * max(z, 1.0)


def pair_margin(a: float, b: float, probabilities: bool = False) -> float:
    """The margin of a decision between two floats (which is larger): their gap over both motions.
    Equal values are a tie broken by position, the same wherever the two floats are equal; inf."""
    if a == b:
        return float("inf")
    motion = _probability_motion if probabilities else _motion
    return abs(a - b) / (motion(a) + motion(b))


@dataclass
class Margins:
    """The smallest margin seen per kind of decision, with where it was, and how many were seen."""

    smallest: dict[str, tuple[float, str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def note(self, kind: str, margins, where: str = "") -> None:
        margins = np.asarray(margins, dtype=np.float64).ravel()
        if margins.size == 0:
            return
        self.counts[kind] = self.counts.get(kind, 0) + int(margins.size)
        k = int(np.argmin(margins))
        if kind not in self.smallest or margins[k] < self.smallest[kind][0]:
            self.smallest[kind] = (float(margins[k]), f"{where}#{k}" if where else f"#{k}")

    def failures(self) -> list[str]:
        return [
            f"{kind}: margin {m:.3g} (at {where}) of {self.counts[kind]} decisions is within the tolerance"
            for kind, (m, where) in sorted(self.smallest.items())
            if m <= 1.0
        ]

    def summary(self) -> dict[str, dict]:
        return {k: {"decisions": self.counts[k], "smallest": round(m, 3)} for k, (m, _) in self.smallest.items()}


# --- inside the models ------------------------------------------------------------------------------


def _replace_margins(logits: torch.Tensor, uniforms, config, margins: Margins) -> None:
    """REPLACE's decision per row (hades_ray/perturb/replace.py ``choose_tokens``), re-derived in float64:
    the token is the one at the position of the sorted logits where the draw falls. It changes if the
    draw crosses a cumulative-probability boundary, or if the logit at that position swaps places with
    a neighbour (the one just outside top-k included); swaps elsewhere only move the boundaries, by
    less than the boundaries' own motion."""
    values, _ = logits.double().sort(dim=-1, descending=True)
    values = values.numpy()
    if config.decoding == "greedy":
        margins.note("replace: greedy argmax", [pair_margin(v[0], v[1]) for v in values if np.isfinite(v[1])])
        return
    kept = values[:, : min(config.top_k, values.shape[-1])] if config.decoding == "top_k" else values
    scaled = kept / config.temperature
    probs = np.exp(scaled - scaled.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    if config.decoding == "top_p":
        before = np.cumsum(probs, axis=-1) - probs
        margins.note("replace: top-p membership", np.abs(before - config.top_p).min(axis=-1) / (ATOL + RTOL))
        probs = np.where(before < config.top_p, probs, 0.0)
        probs /= probs.sum(axis=-1, keepdims=True)
    cdf = np.cumsum(probs, axis=-1)
    u = np.asarray(uniforms, dtype=np.float64) * cdf[:, -1]
    picks = np.minimum((cdf < u[:, None]).sum(axis=-1), cdf.shape[-1] - 1)
    rows = np.arange(len(u))
    lower = np.where(picks > 0, u - cdf[rows, np.maximum(picks - 1, 0)], np.inf)
    upper = np.where(picks < cdf.shape[-1] - 1, cdf[rows, picks] - u, np.inf)
    # A cumulative probability moves by at most RTOL (relative motions of the probabilities summed) + ATOL.
    margins.note("replace: inverse-CDF draw", np.minimum(lower, upper) / (ATOL + RTOL))
    order = []
    for row, pick in zip(values, picks):
        neighbours = [row[j] for j in (pick - 1, pick + 1) if 0 <= j < len(row) and np.isfinite(row[j])]
        order.append(min((pair_margin(row[pick], n) for n in neighbours), default=np.inf))
    margins.note("replace: the drawn token's place among the logits", order)


def _multinomial_margins(probs: torch.Tensor, picked: torch.Tensor, q: torch.Tensor, margins: Margins) -> None:
    expected = (probs / q).reshape(-1, probs.shape[-1]).argmax(dim=-1)  # in the input's dtype, as ATen does
    ratios = (probs.double() / q.double()).reshape(-1, probs.shape[-1])
    top = ratios.topk(2, dim=-1).values if ratios.shape[-1] > 1 else None
    if not torch.equal(expected, picked.reshape(-1).to(expected.dtype)):
        raise AssertionError(
            "torch.multinomial no longer samples as argmax(p / q): the margin recorder cannot follow it"
        )
    if top is None:
        return
    # p and q each move by RTOL relative: a ratio by 2 RTOL, a gap between two ratios by twice that.
    gap = ((top[:, 0] - top[:, 1]) / top[:, 0]).numpy()
    margins.note("sampling: multinomial draw", gap / (4 * RTOL + ATOL))


@contextlib.contextmanager
def recording():
    """Record the margins of REPLACE's choices and of every one-sample ``torch.multinomial`` in this
    process while the block runs; yields the ``Margins``."""
    import hades_ray.perturb.replace as replace

    margins = Margins()
    choose, multinomial = replace.choose_tokens, torch.multinomial

    def recorded_choose(logits, uniforms, config):
        _replace_margins(logits, uniforms, config, margins)
        return choose(logits, uniforms, config)

    def recorded_multinomial(input, num_samples, replacement=False, *, generator=None, out=None):  # noqa: A002
        if num_samples != 1 or out is not None or input.device.type != "cpu":
            return multinomial(input, num_samples, replacement, generator=generator, out=out)
        source = generator if generator is not None else torch.default_generator
        state = source.get_state()
        q = torch.empty_like(input).exponential_(1, generator=generator)
        source.set_state(state)
        picked = multinomial(input, num_samples, replacement, generator=generator)
        _multinomial_margins(input, picked, q, margins)
        return picked

    replace.choose_tokens, torch.multinomial = recorded_choose, recorded_multinomial
    try:
        yield margins
    finally:
        replace.choose_tokens, torch.multinomial = choose, multinomial


# --- from the outputs -------------------------------------------------------------------------------


def rank_margins(pool_rows: list[dict], margins: Margins) -> None:
    """RANK keeps the lowest perplexity: its gap to the next lowest."""
    for row in pool_rows:
        ppls = sorted(row["candidate_ppls"])
        if len(ppls) > 1:
            margins.note("rank: lowest perplexity", [pair_margin(ppls[0], ppls[1])], row["doc_id"])


def threshold_margins(kind: str, probabilities, threshold: float, margins: Margins, where: str = "") -> None:
    """A label at a setting's threshold: p against it (the setting does not move)."""
    margins.note(kind, [abs(p - threshold) / _probability_motion(p) for p in probabilities], where)


def similarity_margins(kind: str, values, cut: float, margins: Margins, where: str = "") -> None:
    """A cosine similarity against a setting's cut."""
    margins.note(kind, [abs(v - cut) / _motion(v) for v in values], where)


def order_margins(kind: str, probabilities, top: int, margins: Margins) -> None:
    """The ``top`` largest probabilities in order (a page's most suspicious words): each against the next."""
    ranked = sorted(probabilities, reverse=True)[: top + 1]
    margins.note(kind, [pair_margin(a, b, probabilities=True) for a, b in zip(ranked, ranked[1:])])
