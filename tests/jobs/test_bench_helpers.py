"""The pieces the benchmarks share for their flags, pages and training loops (jobs/bench_common.py)."""

from __future__ import annotations

import pytest


def test_a_jobs_flags_come_from_one_table_with_types_from_their_defaults(capsys):
    from jobs.bench_common import options

    flags = {"--docs": (200, "documents"), "--rate": (1.5, "a rate"), "--name": (None, "a name")}
    flags |= {"--quick": (False, "a switch"), "--sizes": ([1, 2], "sizes")}
    flags |= {"--set": ([], "an override", {"dest": "overrides", "action": "append"})}
    args = options("A job.", flags, ["--docs", "3", "--sizes", "4", "5", "--quick", "--set", "a=1", "--set", "b=2"])
    assert (args.docs, args.rate, args.name, args.quick, args.sizes) == (3, 1.5, None, True, [4, 5])
    assert args.overrides == ["a=1", "b=2"]
    with pytest.raises(SystemExit):
        options("A job.", flags, ["--help"])
    shown = capsys.readouterr().out
    assert "A job." in shown and all(text in shown for text in ("documents", "a switch", "an override"))


def test_a_page_puts_a_blank_line_between_its_blocks_and_a_row_compares_two_figures():
    from jobs.bench_common import page, versus

    assert page("# Title", ["| a |", "|---|"], None, "- note") == "# Title\n\n| a |\n|---|\n\n- note\n"
    assert versus("tokens", 2000, 1000, ",") == ["tokens", "2,000", "1,000", "0.50x"]


def test_the_plain_training_loop_fits_a_separable_problem():
    import torch

    from jobs.bench_common import adam_epochs

    torch.manual_seed(0)
    x = torch.cat([torch.randn(16, 2) + 3, torch.randn(16, 2) - 3])
    y = torch.tensor([0] * 16 + [1] * 16)
    model, validated = torch.nn.Linear(2, 2), []
    adam_epochs(model, 0.1, 20, lambda: [(x[:16], y[:16]), (x[16:], y[16:])], lambda: validated.append(1))
    assert len(validated) == 20 and (model(x).argmax(-1) == y).all()
