"""``hades-ray generate --guard http://HOST:PORT``: the guard asks a detector served by ``hades-ray serve``
(the real application, on loopback, with a bearer token: the package's, tests/serve/conftest.py) and
makes the interventions the same detector makes in-process; a wrong token or an unreachable server is a
one-line error."""

from __future__ import annotations

import json


from hades_ray.cli import main
from hades_ray.guard.loop import GuardSettings, guarded_generate
from hades_ray.guard.sampling import Sampling
from hades_ray.text.languages import DEFAULT_LANGUAGE as ENGLISH
from tests.guard.test_guard import PROMPTS, _prompts_file, _read
from tests.loopback import free_port
from tests.serve.running import TOKEN

KEYS = ("token_position", "attempt", "rejected", "replacement", "replacement_flagged")


def _median(judge, model, tokenizer, sampling) -> float:
    """Halfway between the two middle p(H) of a scoring-only run (no word sits on the threshold)."""
    got = guarded_generate(model, tokenizer, PROMPTS, sampling, judge, GuardSettings(2.0, 0), 0)
    p = sorted(w["p"] for g in got for w in g["scores"])
    return (p[len(p) // 2 - 1] + p[len(p) // 2]) / 2


def test_served_judge_makes_the_local_judges_interventions(generator, detector, url):
    from hades_ray.guard.http_judge import HttpJudge
    from hades_ray.guard.judge import open_judge

    tokenizer, model = generator
    sampling = Sampling(max_new_tokens=24, top_k=20, no_end=True)
    served, local = HttpJudge(url, token=TOKEN), open_judge(str(detector), None, "all", lang=ENGLISH)
    assert served.threshold == local.threshold  # the detector's stored one, read from /healthz
    threshold = _median(local, model, tokenizer, sampling)
    runs = [
        guarded_generate(model, tokenizer, PROMPTS, sampling, judge, GuardSettings(threshold, 2), 3)
        for judge in (served, local)
    ]
    assert sum(len(g["interventions"]) for g in runs[0]) > 3
    for a, b in zip(*runs):
        assert a["tokens"] == b["tokens"]
        assert [{k: e[k] for k in KEYS} for e in a["interventions"]] == [
            {k: e[k] for k in KEYS} for e in b["interventions"]
        ]
        assert [(w["start"], w["word"]) for w in a["scores"]] == [(w["start"], w["word"]) for w in b["scores"]]
        assert all(abs(x["p"] - y["p"]) < 1e-5 for x, y in zip(a["scores"], b["scores"]))


def test_cli_guard_url_writes_what_the_detector_folder_writes(detector, url, tmp_path, monkeypatch):
    prompts = _prompts_file(tmp_path, bad=False)
    runs = {}
    monkeypatch.setenv("HADES_SERVE_TOKEN", TOKEN)
    for name, guard in (("served", url), ("local", str(detector))):
        out = tmp_path / name
        argv = ["generate", "--prompts", str(prompts), "--output", str(out), "--executor", "local", "--seed", "2"]
        argv += ["--guard", guard, "--words", "all", "--threshold", "0.5", "--max-new-tokens", "16"]
        assert main(argv) == 0
        runs[name] = _read(out / "generations.jsonl"), _read(out / "interventions.jsonl")
        assert json.loads((out / "summary.json").read_text())["guard"]["detector"] == (
            url if name == "served" else str(detector.resolve())
        )
    (gen_s, events_s), (gen_l, events_l) = runs["served"], runs["local"]
    assert [g["token_ids"] for g in gen_s] == [g["token_ids"] for g in gen_l]
    assert [{k: e[k] for k in KEYS} for e in events_s] == [{k: e[k] for k in KEYS} for e in events_l]


def test_guarded_generate_with_the_url_is_the_commands_generation(generator, url, tmp_path, monkeypatch):
    from hades_ray import guarded_generate as generate_with_guard

    tokenizer, model = generator
    monkeypatch.setenv("HADES_SERVE_TOKEN", TOKEN)
    out = tmp_path / "cli"
    argv = ["generate", "--prompts", str(_prompts_file(tmp_path, bad=False)), "--output", str(out), "--seed", "2"]
    argv += ["--executor", "local", "--guard", url, "--threshold", "0.5", "--max-new-tokens", "16"]
    assert main(argv) == 0
    prompts = [g["prompt"] for g in _read(out / "generations.jsonl")]
    mine = generate_with_guard(model, tokenizer, prompts, detector=url, threshold=0.5, max_new_tokens=16, seed=2)
    strip = lambda r: {k: v for k, v in r.items() if k not in ("id", "events")}  # noqa: E731
    assert [strip(r) for r in mine] == [strip(g) for g in _read(out / "generations.jsonl")]


def test_wrong_token_and_unreachable_server_are_one_line_errors(url, tmp_path, capsys, monkeypatch):
    argv = ["generate", "--prompts", str(_prompts_file(tmp_path, bad=False)), "--output", str(tmp_path / "o")]
    argv += ["--executor", "local"]
    monkeypatch.setenv("HADES_SERVE_TOKEN", "not-it")
    assert main([*argv, "--guard", url]) == 2
    err = capsys.readouterr().err.strip()
    assert "HADES_SERVE_TOKEN" in err and len(err.splitlines()) == 1
    assert main([*argv, "--guard", f"http://127.0.0.1:{free_port()}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "cannot reach the served detector" in err and len(err.splitlines()) == 1
