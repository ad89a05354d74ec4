"""The rounds' batch sizes: the paper preset's schedule grows from 200 to 4,000 over 14 rounds, 12,719 in all."""

import pytest

from hades_ray.config import ConfigError, load_config
from hades_ray.select.schedule import grown_sizes, planned_sizes, round_size, schedule_power


def test_paper_schedule_grows_from_200_to_4000_in_14_rounds_for_12719():
    select = load_config("paper").select
    sizes = planned_sizes(select)
    assert len(sizes) == 14 and sizes[0] == 200 and sizes[-1] == 4000
    assert sum(sizes) == 12_719
    assert all(a < b for a, b in zip(sizes, sizes[1:]))  # "increasing the annotation scale with each round"
    assert round_size(select, 13) == 4000 and round_size(select, 20) == 4000  # later rounds take the last
    # The formula the docs show: first + 2k + (last - first - 2 * 13) * (k / 13) ** p, rounded.
    p = schedule_power(200, 4000, 14, 12_719)
    assert abs(p - 5.35) < 0.01
    assert all(abs(s - (200 + 2 * k + 3774 * (k / 13) ** p)) < 1 for k, s in enumerate(sizes))


def test_the_total_is_exact_for_any_reachable_one():
    for total in (6_756, 9_001, 20_000, 52_044):
        sizes = grown_sizes(200, 4000, 14, total)
        assert sum(sizes) == total and all(a < b for a, b in zip(sizes, sizes[1:]))
    assert grown_sizes(10, 50, 3, 80) == [10, 20, 50]


def test_a_list_applies_when_the_schedule_is_off():
    select = load_config("local", overrides=["select.round_sizes=[50,30]"]).select
    assert planned_sizes(select) == [50, 30] and round_size(select, 5) == 30
    assert select.schedule.rounds == 0


def test_an_unreachable_total_is_one_line_saying_what_to_give():
    with pytest.raises(ConfigError, match=r"select.schedule.total: 100 cannot grow .* give one in \[6756, 52044\]"):
        load_config("paper", overrides=["select.schedule.total=100"])
    with pytest.raises(ConfigError, match="select.schedule.rounds"):
        load_config("paper", overrides=["select.schedule.rounds=1"])
