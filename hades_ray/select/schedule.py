"""How many instances each round selects: an explicit list, or a schedule that grows like the paper's.

The paper ran 14 rounds (§3.4), "increasing the annotation scale with each round (~200 to ~4000)", for
12,719 judged instances. A geometric or linear ramp from 200 to 4,000 over 14 rounds would judge
18.7k or 29.4k, so the rounds must stay small for long and grow late, yet each larger than the one
before. The schedule is a power curve through ``first`` and ``last`` on top of a least growth ``s`` a
round (2, so that rounding never makes two rounds equal; ``RoundSchedule.step``):

    size(k) = first + s*k + (last - first - s*(rounds - 1)) * (k / (rounds - 1)) ** p,    k = 0 .. rounds - 1

with the exponent ``p`` the one for which the sizes add up to ``total`` (found by bisection; rounded
to whole instances by the largest-remainder rule, so they add up to exactly ``total``). Rounds after
``rounds`` select ``last`` each. The paper's 200, 4000, 14 and 12,719 give p = 5.35 and

    200 202 204 208 215 233 272 351 496 745 1146 1765 2682 4000
"""

from __future__ import annotations

import math

from hades_ray.select.settings import RoundSchedule


def _sizes(first: int, last: int, rounds: int, power: float) -> list[float]:
    step = RoundSchedule(rounds, first, last).step()
    rest = last - first - step * (rounds - 1)
    return [first + step * k + rest * (k / (rounds - 1)) ** power for k in range(rounds)]


def schedule_power(first: int, last: int, rounds: int, total: int) -> float:
    """The exponent ``p`` for which the ``rounds`` sizes from ``first`` to ``last`` add up to ``total``."""
    low, high = 1e-9, 1e9  # the sum falls as the exponent grows
    lowest, highest = RoundSchedule(rounds, first, last, total).total_range()
    if not lowest <= total <= highest:
        raise ValueError(f"a total of {total} cannot grow from {first} to {last} in {rounds} rounds: "
                         f"give one in [{lowest}, {highest}]")  # fmt: skip
    for _ in range(200):
        middle = math.sqrt(low * high)
        low, high = (middle, high) if sum(_sizes(first, last, rounds, middle)) > total else (low, middle)
    return math.sqrt(low * high)


def grown_sizes(first: int, last: int, rounds: int, total: int) -> list[int]:
    """The ``rounds`` batch sizes from ``first`` to ``last`` that add up to ``total`` (see the module)."""
    values = _sizes(first, last, rounds, schedule_power(first, last, rounds, total))
    sizes = [math.floor(v) for v in values]
    by_remainder = sorted(range(rounds), key=lambda k: (sizes[k] - values[k], k))
    for k in by_remainder[: total - sum(sizes)]:
        sizes[k] += 1
    return sizes


def planned_sizes(select) -> list[int]:
    """The batch sizes of the rounds ``select.schedule`` (or else ``select.round_sizes``) names; the
    last one repeats after them."""
    s = select.schedule
    return grown_sizes(s.first, s.last, s.rounds, s.total) if s.rounds else list(select.round_sizes)


def round_size(select, round_index: int) -> int:
    """Round ``round_index``'s batch size (0-based)."""
    sizes = planned_sizes(select)
    return sizes[min(round_index, len(sizes) - 1)]
