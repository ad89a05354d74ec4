"""``make device-check`` on a CPU: the same steps as on a GPU with the micro models, one run that
prints both stages' tokens/s, REPLACE's busy share, peak memory, the identity verdict and the plan.

``jobs/device_check.py``'s ``main`` runs in this process (a process of its own would only add its
imports: the script's ``__main__`` is ``sys.exit(main())``)."""

import json

import pytest


@pytest.fixture
def torch_threads():
    """The check sets torch to one thread on a CPU, as its own process would: this process gets its
    thread count back afterwards."""
    import torch

    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def test_the_device_check_prints_every_figure_and_finds_the_documents_identical(tmp_path, capsys, torch_threads):
    from jobs.device_check import main

    output = tmp_path / "check.json"
    args = ["--device", "cpu", "--docs", "12", "--alone", "3", "--seconds", "0.3", "--output", str(output)]
    assert main(args) == 0
    lines = capsys.readouterr().out
    for label in ("REPLACE:", "RANK:", "REPLACE busy share:", "peak memory:", "identity:", "plan for 1,000,000"):
        assert label in lines, lines
    result = json.loads(output.read_text())
    assert result["identity"]["byte_identical"] and result["identity"]["documents"] > 0
    replace, rank = result["measured"]["replace"], result["measured"]["rank"]
    assert replace["tokens_per_s"] > 0 and rank["tokens_per_s"] > 0
    assert 0 < replace["busy_share"] <= 1
    assert result["plan_1m_segments"]["device_hours"] > 0
