"""A hub model that is neither cached nor reachable: one line per model, within seconds, no traceback and no
retries (models/registry.py), whichever command asks; a cached one loads from its cache folder. No network:
the hub is a closed port on 127.0.0.1 and the Hugging Face cache an empty temporary folder."""

from __future__ import annotations

import logging
import time

import pytest

from hades_ray.cli import main
from hades_ray.detect.synthetic import toy_instances
from hades_ray.io.hades_format import write_instances
from hades_ray.models import registry
from hades_ray.models.registry import ModelNotFoundError, resolve_model
from tests.loopback import free_port

PAPER_MODELS = {"bert-base-cased", "bert-large-uncased", "gpt2-medium", "xlnet-large-cased", "roberta-large"}


@pytest.fixture
def no_hub(tmp_path, monkeypatch):
    """An empty cache, a hub that refuses connections, online mode, and fresh per-process memos."""
    from huggingface_hub import constants

    endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(registry, "_HUB_PROBED", {})
    return endpoint


def test_a_model_neither_cached_nor_reachable_is_one_line_the_hub_asked_once(no_hub, monkeypatch):
    from huggingface_hub import get_session

    requests = []
    session = get_session()
    real_head = session.head
    monkeypatch.setattr(session, "head", lambda *a, **k: requests.append(a) or real_head(*a, **k))
    started = time.perf_counter()
    for _ in range(3):
        with pytest.raises(ModelNotFoundError) as caught:
            resolve_model("roberta-large")
    with pytest.raises(ModelNotFoundError):
        resolve_model("gpt2-medium")
    assert time.perf_counter() - started < 10
    message = str(caught.value)
    assert "\n" not in message and "'roberta-large'" in message and no_hub in message
    assert "local folder" in message and "hades-ray models build" in message
    assert len(requests) == 1 and registry._HUB_PROBED[no_hub]  # the hub was asked once in all


def test_offline_mode_names_it_without_asking_the_hub(no_hub, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(registry, "_hub_unreachable", lambda: pytest.fail("offline: the hub is not asked"))
    with pytest.raises(ModelNotFoundError, match="not in the Hugging Face cache and HF_HUB_OFFLINE is set"):
        resolve_model("bert-base-cased")


def test_a_cached_model_loads_from_its_cache_folder_when_the_hub_is_unreachable(no_hub, tmp_path):
    from huggingface_hub import constants

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hf-cache" / "models--org--tiny"
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    assert resolve_model("org/tiny") == str(snapshot)  # a folder: from_pretrained makes no request
    constants.HF_HUB_OFFLINE = True  # (the fixture restores it)
    assert resolve_model("org/tiny") == "org/tiny"  # offline, the hub id loads from the cache itself


def _without_retries(caplog, err: str) -> None:
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert not any(word in err + logged for word in ("Traceback", "Retry", "thrown while requesting"))


def test_a_paper_preset_job_fails_with_one_line_in_seconds(no_hub, tmp_path, capsys, caplog):
    import hades_ray.perturb.runner  # noqa: F401 - imported before the clock starts: the hub is what is timed

    started = time.perf_counter()
    args = ["perturb", "--preset", "paper", "--input", "demo", "--limit", "1", "--output", str(tmp_path / "out")]
    assert main(args) == 2
    assert time.perf_counter() - started < 30
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("hades-ray perturb: error: model 'bert-base-cased' is not in")
    _without_retries(caplog, err)


def test_reproduce_cost_on_the_paper_grid_without_a_hub_is_one_line_per_model(no_hub, tmp_path, capsys, caplog):
    """The issue's command: it ends within seconds, with one line and an estimate for each model."""
    dataset = tmp_path / "dataset"
    for split, n in (("train", 8), ("valid", 4), ("test", 4)):
        write_instances(toy_instances(n, seed=1), dataset / f"{split}.txt")
    caplog.set_level(logging.INFO)
    import hades_ray.reproduce.run  # noqa: F401 - imported before the clock starts

    started = time.perf_counter()
    args = ["reproduce", "tables", "--preset", "paper", "--dataset", str(dataset), "--cost-only"]
    assert main([*args, "--set", "reproduce.test_split=valid"]) == 0
    assert time.perf_counter() - started < 30
    out, err = capsys.readouterr()
    lines = [r.getMessage() for r in caplog.records if "is not in the Hugging Face cache" in r.getMessage()]
    assert sorted(line.split()[1] for line in lines) == sorted(PAPER_MODELS)  # "counting MODEL tokens as ..."
    assert "9 trials" in out and "~: tokenizer not available here" in out
    _without_retries(caplog, err)
