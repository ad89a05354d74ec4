"""``hades_ray.guarded_generate``: the generations ``hades-ray generate --guard`` writes, for a model
the caller loaded, and bad prompts or settings as one-line errors."""

from __future__ import annotations

import json

import pytest

from hades_ray import Detector, guarded_generate
from hades_ray.cli import main

PROMPTS = ["the city of", "in 1990 the band released their first album", "he was born in", "x", "a b c d e f"]


def _cli(tmp_path, *flags) -> tuple[list[dict], list[dict]]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in PROMPTS))
    out = tmp_path / "out"
    argv = ["generate", "--prompts", str(prompts), "--output", str(out), "--executor", "local", *flags]
    assert main(argv) == 0
    read = lambda name: [json.loads(line) for line in (out / name).read_text().splitlines()]  # noqa: E731
    return read("generations.jsonl"), read("interventions.jsonl")


def _same(mine: list[dict], cli: list[dict], events: list[dict]) -> None:
    for k, (record, line) in enumerate(zip(mine, cli, strict=True)):
        assert record["id"] == f"prompt:{k + 1}"
        assert {n: v for n, v in record.items() if n not in ("id", "events")} == {
            n: v for n, v in line.items() if n != "id"
        }
        theirs = [{n: v for n, v in e.items() if n != "id"} for e in events if e["id"] == line["id"]]
        assert [{n: v for n, v in e.items() if n != "id"} for e in record["events"]] == theirs


@pytest.mark.parametrize("as_object", [True, False])
def test_the_commands_generations_for_a_model_already_loaded(causal_online, generator, tmp_path, as_object):
    tokenizer, model = generator
    flags = ["--guard", str(causal_online), "--max-new-tokens", "16", "--max-retries", "2", "--seed", "5"]
    flags += ["--threshold", "0.56", "--batch-size", "2", "--top-k", "40"]
    cli, events = _cli(tmp_path, *flags)
    detector = Detector.open(causal_online) if as_object else str(causal_online)
    mine = guarded_generate(
        model,
        tokenizer,
        PROMPTS,
        detector=detector,
        threshold=0.56,
        max_retries=2,
        max_new_tokens=16,
        seed=5,
        batch_size=2,
        top_k=40,
    )
    assert events  # the guard did take words back at this threshold
    _same(mine, cli, events)
    assert tokenizer.padding_side == "right"  # the caller's tokenizer is left as it was


def test_an_encoder_judge_and_the_guard_off(encoder_online, generator, tmp_path):
    tokenizer, model = generator
    cli, events = _cli(tmp_path, "--guard", str(encoder_online), "--max-new-tokens", "12", "--threshold", "0.5")
    det = Detector.open(encoder_online)
    _same(guarded_generate(model, tokenizer, PROMPTS, detector=det, max_new_tokens=12, threshold=0.5), cli, events)
    plain, _ = _cli(tmp_path / "plain", "--max-new-tokens", "12", "--seed", "2")
    unguarded = guarded_generate(model, tokenizer, PROMPTS, detector=None, max_new_tokens=12, seed=2)
    _same(unguarded, plain, [])
    one = guarded_generate(model, tokenizer, PROMPTS[1], max_new_tokens=4)  # one prompt: one record
    assert one["prompt"] == PROMPTS[1] and one["words"] == [] and one["events"] == [] and one["new_tokens"] <= 4


@pytest.mark.parametrize(
    "prompts, settings, error, message",
    [
        (["fine", ""], {}, ValueError, "prompts[1]: empty_prompt"),
        (["fine", 7], {}, ValueError, "prompts[1]: prompt_not_a_string (got int)"),
        (["word " * 600], {}, ValueError, "prompts[0]: prompt_too_long (its tokens and max_new_tokens=60"),
        (["fine"], {"max_new_tokens": 0}, ValueError, "guard.max_new_tokens must be in [1, "),
        (["fine"], {"top_q": 0.3}, TypeError, "unknown setting 'top_q'"),
        (["fine"], {"detector": 3}, ValueError, "detector: a hades_ray.Detector"),
    ],
)
def test_bad_prompts_and_settings_are_one_line_errors(micro_home, generator, prompts, settings, error, message):
    tokenizer, model = generator
    with pytest.raises(error) as raised:
        guarded_generate(model, tokenizer, prompts, **settings)
    assert message in str(raised.value) and len(str(raised.value).splitlines()) == 1


def test_an_offline_detector_is_refused(encoder_offline, generator):
    with pytest.raises(ValueError, match="the guard needs an online detector"):
        guarded_generate(*generator, ["fine"], detector=Detector.open(encoder_offline))
