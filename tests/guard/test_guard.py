"""The online guard (hades_ray/guard): it never emits a word it flagged while retries remain, with the
guard off (or never flagging) it draws exactly ``model.generate``'s tokens for the same seed, and bad
prompt lines are quarantined with their reason while the good ones are generated."""

from __future__ import annotations

import json

import pytest
import torch

from hades_ray.cli import main

SETTINGS = {"backbone": "local:mlm", "revision": None, "mode": "online", "window": 32}
SETTINGS |= {"pooling": "max", "mlp_layers": 2, "freeze": "all"}
PROMPTS = ["the city of", "in 1990 the band released their first album", "he was born in", "x"]


@pytest.fixture(scope="module")
def detector(micro_home, tmp_path_factory):
    """A random-weight online detector on the micro MLM: its p(H) hovers near 0.5, so a threshold at
    the median of its scores flags about half of the words."""
    from hades_ray.detect.model import build_classifier, export_detector, trainable_state
    from hades_ray.models.registry import resolve_model

    torch.manual_seed(3)
    tokenizer, model = build_classifier(resolve_model("local:mlm"), SETTINGS)
    return export_detector(tmp_path_factory.mktemp("det") / "online", trainable_state(model), SETTINGS, tokenizer)


class LetterJudge:
    """A judge with a rule one can check by eye: p(H) = 1 for words holding ``letter``, else 0."""

    def __init__(self, letter: str, threshold: float = 0.5):
        self.letter, self.threshold, self.calls = letter, threshold, 0

    def begin(self, rows: int) -> None:
        pass

    def score_chunks(self, requests):
        self.calls += 1
        return [
            [{"start": 0, "end": len(chunk), "word": chunk.strip(), "p": float(self.letter in chunk)}]
            if chunk.strip()
            else []
            for _, _, chunk in requests
        ]


def _generate_ids(model, tokenizer, prompts, seed, **sampling):
    enc = tokenizer(prompts, return_tensors="pt", padding=True)
    enc = {k: enc[k] for k in ("input_ids", "attention_mask")}  # the micro kit's BERT tokenizer adds token types
    torch.manual_seed(seed)
    out = model.generate(**enc, do_sample=True, **sampling)
    return out[:, enc["input_ids"].shape[1] :].tolist()


def _strip(tokens, end):
    return tokens[: tokens.index(end) + 1] if end in tokens else tokens


# The model's defaults too: transformers' global ones (top-k 50) fill what neither the model nor the user set.
@pytest.mark.parametrize("seed, no_end, given", [(0, False, True), (1, True, True), (2, False, False)])
def test_guard_that_never_flags_draws_generates_tokens(generator, seed, no_end, given):
    from hades_ray.guard.loop import GuardSettings, guarded_generate
    from hades_ray.guard.sampling import Sampling

    tokenizer, model = generator
    values = {"top_k": 20, "temperature": 0.9} if given else {}
    sampling = Sampling(max_new_tokens=20, no_end=no_end, **values)
    judge = LetterJudge("e", threshold=1.5)  # p(H) is at most 1: nothing reaches the threshold
    got = guarded_generate(model, tokenizer, PROMPTS, sampling, judge, GuardSettings(1.5, 3), seed)
    end = model.generation_config.eos_token_id
    extra = {"suppress_tokens": [end]} if no_end else {}
    expected = _generate_ids(model, tokenizer, PROMPTS, seed, max_new_tokens=20, **values, **extra)
    assert [g["tokens"] for g in got] == [_strip(e, end) for e in expected]
    assert judge.calls > 0 and not any(g["interventions"] for g in got)
    if no_end:
        assert all(len(g["tokens"]) == 20 for g in got)


def test_guard_never_emits_a_flagged_word_while_retries_remain(generator):
    from hades_ray.guard.loop import GuardSettings, guarded_generate
    from hades_ray.guard.sampling import Sampling

    tokenizer, model = generator
    judge = LetterJudge("e")
    got = guarded_generate(model, tokenizer, PROMPTS, Sampling(max_new_tokens=25), judge, GuardSettings(0.5, 2), 5)
    assert sum(len(g["interventions"]) for g in got) > 0
    for g in got:
        retries = {}
        for event in g["interventions"]:
            assert "e" in event["rejected"] and event["p_rejected"] == 1.0
            retries[event["token_position"]] = max(retries.get(event["token_position"], 0), event["attempt"])
            assert (event["replacement_flagged"]) == ("e" in event["replacement"])
        flagged = [w for w in g["scores"] if w["p"] >= 0.5]
        # Each flagged word that stands in the text had exhausted its 2 retries.
        assert len(flagged) == g["emitted_flagged"]
        exhausted = [e for e in g["interventions"] if e["attempt"] == 2 and e["replacement_flagged"]]
        assert len(exhausted) == g["emitted_flagged"]


def test_guard_with_many_retries_leaves_no_flagged_word(generator):
    """With retries to spare, the letter the judge rejects is gone from every judged word."""
    from hades_ray.guard.loop import GuardSettings, guarded_generate
    from hades_ray.guard.sampling import Sampling

    tokenizer, model = generator
    got = guarded_generate(
        model, tokenizer, PROMPTS, Sampling(max_new_tokens=25), LetterJudge("a"), GuardSettings(0.5, 50), 2
    )
    for g in got:
        assert g["emitted_flagged"] == 0
        assert all("a" not in w["word"] for w in g["scores"])
        assert all(e["replacement_flagged"] is False for e in g["interventions"])


GOOD = [{"id": "a", "prompt": "the city of"}, {"id": 7, "prompt": "he was born in"}, {"prompt": "in 1990 the band"}]


def _prompts_file(tmp_path, bad: bool = True):
    lines = [json.dumps(r).encode() for r in GOOD]
    if bad:
        lines += [
            b"not json",
            b'{"prompt": 3}',
            b'{"prompt": "   "}',
            b'["a list"]',
            b'{"text": "no prompt key"}',
            b'{"prompt": "bad \xff byte"}',
            json.dumps({"prompt": "word " * 5000}).encode(),  # 25,000 characters
            json.dumps({"id": "long", "prompt": "word " * 600}).encode(),  # more tokens than the context
            b"",
        ]
    path = tmp_path / "prompts.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_bad_prompts_are_quarantined_and_the_good_ones_generated(micro_home, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["generate", "--prompts", str(_prompts_file(tmp_path)), "--output", str(out), "--executor", "local"]
    assert main([*argv, "--max-new-tokens", "6", "--seed", "3"]) == 0
    reasons = {q["source"].rsplit(":", 1)[1]: q["reason"] for q in _read(out / "quarantine.jsonl")}
    assert reasons == {
        "4": "invalid_json",
        "5": "prompt_not_a_string",
        "6": "empty_prompt",
        "7": "not_an_object",
        "8": "missing_prompt",
        "9": "invalid_utf8",
        "10": "prompt_too_long",
        "11": "prompt_too_long",
    }
    generations = _read(out / "generations.jsonl")
    assert [g["id"] for g in generations] == ["a", "7", "prompts:3"]
    assert all(g["text"] == g["prompt"] + g["generation"] and g["new_tokens"] >= 1 for g in generations)
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["read"], summary["generated"], summary["quarantined"]) == (11, 3, 8)
    assert summary["quarantined_by_reason"]["prompt_too_long"] == 2


def test_guard_off_is_model_generate_with_the_batch_seed(generator, tmp_path):
    tokenizer, model = generator
    out = tmp_path / "out"
    argv = ["generate", "--prompts", str(_prompts_file(tmp_path, bad=False)), "--output", str(out)]
    assert main([*argv, "--executor", "local", "--max-new-tokens", "12", "--top-k", "30", "--batch-size", "2"]) == 0
    generations = _read(out / "generations.jsonl")
    batches: dict[int, list] = {}
    for g in generations:
        batches.setdefault(g["batch"]["seed"], []).append(g)
    assert len(batches) == 2  # three prompts in batches of two
    end = model.generation_config.eos_token_id
    for seed, members in batches.items():
        members.sort(key=lambda g: g["batch"]["position"])
        expected = _generate_ids(model, tokenizer, [g["prompt"] for g in members], seed, max_new_tokens=12, top_k=30)
        assert [g["token_ids"] for g in members] == [_strip(e, end) for e in expected]


def _median_p(detector, tmp_path) -> float:
    out = tmp_path / "scored"
    argv = ["generate", "--prompts", str(_prompts_file(tmp_path, bad=False)), "--output", str(out)]
    argv += ["--guard", str(detector), "--max-retries", "0", "--executor", "local", "--max-new-tokens", "20"]
    assert main([*argv, "--threshold", "1.0"]) == 0
    generations = _read(out / "generations.jsonl")
    assert not _read(out / "interventions.jsonl")  # retries 0: scores only
    return float(sorted(w["p"] for g in generations for w in g["words"])[len(generations[0]["words"]) // 2])


def test_cli_guard_emits_flagged_words_only_after_its_retries(detector, tmp_path):
    threshold = _median_p(detector, tmp_path)
    out = tmp_path / "guarded"
    argv = ["generate", "--prompts", str(_prompts_file(tmp_path, bad=False)), "--output", str(out), "--seed", "1"]
    argv += ["--guard", str(detector), "--threshold", str(threshold), "--max-retries", "2", "--executor", "local"]
    assert main([*argv, "--max-new-tokens", "20"]) == 0
    events = _read(out / "interventions.jsonl")
    assert events and all(e["p_rejected"] >= threshold for e in events)
    for g in _read(out / "generations.jsonl"):
        mine = [e for e in events if e["id"] == g["id"]]
        exhausted = {(e["char_start"], e["char_end"]) for e in mine if e["attempt"] == 2 and e["replacement_flagged"]}
        for word in g["words"]:
            assert word["flag"] == (word["p"] >= threshold)
            if word["flag"]:  # it stands in the text only where both retries were spent
                assert any(s <= word["start"] and word["end"] <= e for s, e in exhausted)
        for e in mine:
            assert g["text"][e["char_start"] : e["char_end"]] == e["replacement"]
    first = (out / "generations.jsonl").read_bytes()
    assert main([*argv, "--max-new-tokens", "20", "--force"]) == 0
    assert (out / "generations.jsonl").read_bytes() == first  # same seed, same text


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--html"], "--html shades words"),
        (["--threshold", "0.3"], "--threshold needs --guard"),
        (["--max-new-tokens", "0"], "guard.max_new_tokens must be in [1, "),
        (["--guard", "/nonexistent/detector"], "is not a detector folder"),
    ],
)
def test_bad_arguments_are_one_line_errors(micro_home, tmp_path, capsys, extra, message):
    argv = ["generate", "--prompts", str(_prompts_file(tmp_path, bad=False)), "--output", str(tmp_path / "o")]
    assert main([*argv, "--executor", "local", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_offline_detector_is_refused(micro_home, tmp_path, capsys):
    from hades_ray.detect.model import build_classifier, export_detector, trainable_state
    from hades_ray.models.registry import resolve_model

    settings = {**SETTINGS, "mode": "offline"}
    tokenizer, model = build_classifier(resolve_model("local:mlm"), settings)
    folder = export_detector(tmp_path / "offline", trainable_state(model), settings, tokenizer)
    argv = ["generate", "--prompts", str(_prompts_file(tmp_path, bad=False)), "--output", str(tmp_path / "o")]
    assert main([*argv, "--executor", "local", "--guard", str(folder)]) == 2
    assert "needs an online detector" in capsys.readouterr().err
    lr = tmp_path / "lr"
    lr.mkdir()
    (lr / "detector.json").write_text(json.dumps({"type": "lr", "mode": "offline"}))
    assert main([*argv, "--executor", "local", "--guard", str(lr)]) == 2
    assert "is an lr detector" in capsys.readouterr().err


@pytest.mark.slow  # the guard on a Ray Data actor pool (15-30 s on 2 cores); make test keeps predict's Ray pool
def test_ray_executor_writes_what_the_local_one_does(detector, ray_local, tmp_path):
    """Two shards through a Ray Data actor pool: the same records as in-process, and a rerun skips them."""
    prompts = _prompts_file(tmp_path)
    runs = {}
    for executor in ("local", "ray"):
        out = tmp_path / executor
        argv = ["generate", "--prompts", str(prompts), "--output", str(out), "--executor", executor]
        argv += ["--guard", str(detector), "--threshold", "0.5", "--shard-size", "6", "--max-new-tokens", "8"]
        assert main(argv) == 0
        runs[executor] = [
            (out / f).read_text() for f in ("generations.jsonl", "interventions.jsonl", "quarantine.jsonl")
        ]
        assert json.loads((out / "summary.json").read_text())["shards"]["total"] == 2
    assert runs["ray"] == runs["local"]
    assert main(argv) == 0
    assert json.loads((tmp_path / "ray" / "summary.json").read_text())["shards"]["skipped_finished"] == 2


def test_html_report_shows_prompts_and_generations_as_inert_text(detector, tmp_path):
    from html.parser import HTMLParser

    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(
        json.dumps({"id": "<marquee>x</marquee>", "prompt": "<script>alert(1)</script> the city of"}) + "\n"
    )
    out = tmp_path / "out"
    argv = ["generate", "--prompts", str(prompts), "--output", str(out), "--executor", "local", "--html"]
    assert main([*argv, "--guard", str(detector), "--max-new-tokens", "10"]) == 0
    page = (out / "report.html").read_text()

    class Tags(HTMLParser):
        def __init__(self):
            super().__init__()
            self.tags, self.text = [], []

        def handle_starttag(self, tag, attrs):
            self.tags.append(tag)

        def handle_data(self, data):
            self.text.append(data)

    parser = Tags()
    parser.feed(page)
    assert "script" not in parser.tags and "marquee" not in parser.tags
    assert "<script>alert(1)</script> the city of" in "".join(parser.text)
    generation = _read(out / "generations.jsonl")[0]["generation"]
    assert generation.strip().split()[0] in "".join(parser.text)
