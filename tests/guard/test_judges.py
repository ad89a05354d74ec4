"""The guard's judges (hades_ray/guard/judge.py): the cached causal judge records the p(H) that
``hades-ray score`` gives the final text, window by window; a resample rolls both caches back, so the
text is the one a judge without any cache, or a fresh greedy run, gives; the encoder judge scores all
rows' words together with the bits it gives one by one; and a never-flagging judge leaves
``model.generate``'s tokens untouched."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hades_ray.guard.loop import GuardSettings, guarded_generate
from hades_ray.guard.sampling import Sampling
from hades_ray.text.languages import DEFAULT_LANGUAGE as ENGLISH
from tests.guard.test_guard import PROMPTS, _generate_ids, _strip
from tests.detectors import detector_folder

WINDOW = 16  # tokens: the texts below run over several windows, so the cache restarts at their starts
TOLERANCE = 1e-5  # the same arithmetic in forwards of other shapes: float rounding only


@pytest.fixture(scope="module")
def causal(micro_home, tmp_path_factory):
    gpt2 = str(micro_home / "models" / "gpt2")
    return detector_folder(tmp_path_factory.mktemp("det") / "gpt2", gpt2, "online", WINDOW)


@pytest.fixture(scope="module")
def encoder(micro_home, tmp_path_factory):
    return detector_folder(tmp_path_factory.mktemp("det") / "mlm", str(micro_home / "models" / "mlm"), "online", WINDOW)


class ScratchJudge:
    """A judge without any cache: each chunk's words scored by ``score``'s own scorer on the text so far."""

    def __init__(self, folder, threshold: float):
        from hades_ray.detect.detector import Detector

        self.scorer, self.threshold = Detector.open(folder).scorer(), threshold

    def begin(self, rows: int) -> None:
        pass

    def score_chunks(self, requests):
        from hades_ray.score.words import find_targets

        out = []
        for _, prefix, chunk in requests:
            t = find_targets(prefix + chunk, "all", lang=ENGLISH)
            words = []
            for f, value in zip(t.first, self.scorer.score([t])[0]):
                if t.ends[f] > len(prefix):  # in the chunk, or a word the chunk continues
                    start, end = max(t.starts[f] - len(prefix), 0), t.ends[f] - len(prefix)
                    words.append({"start": start, "end": end, "word": chunk[start:end], "p": float(value)})
            out.append(words)
        return out


def _threshold(judge, prompts, sampling, model, tokenizer) -> float:
    """Halfway between the two middle p(H) of a scoring-only run: the guard then rejects about half of
    the words, and no word sits on the threshold (where float rounding could tip it)."""
    got = guarded_generate(model, tokenizer, prompts, sampling, judge, GuardSettings(2.0, 0), 0)
    p = sorted(w["p"] for g in got for w in g["scores"])
    return (p[len(p) // 2 - 1] + p[len(p) // 2]) / 2


def _texts(tokenizer, prompts, got) -> list[str]:
    from hades_ray.guard.text import TokenText

    return [TokenText(tokenizer, tokenizer(p)["input_ids"]).prompt + g["generation"] for p, g in zip(prompts, got)]


def test_cached_causal_judge_records_what_score_gives_the_same_text(generator, causal):
    """Every word the cached judge scored (rejected ones too, after rollbacks and window restarts) has
    the p(H) ``score``'s scorer gives the text it was judged in, to float rounding."""
    from hades_ray.guard.judge import RecordingJudge, open_judge, score_differences
    from hades_ray.detect.detector import Detector

    tokenizer, model = generator
    judge = open_judge(str(causal), None, "all", lang=ENGLISH)
    assert type(judge).__name__ == "CausalJudge"
    sampling = Sampling(max_new_tokens=40, top_k=20, no_end=True)
    judge.threshold = _threshold(judge, PROMPTS, sampling, model, tokenizer)
    recorder = RecordingJudge(judge)
    got = guarded_generate(model, tokenizer, PROMPTS, sampling, recorder, GuardSettings(judge.threshold, 2), 4)
    assert sum(len(g["interventions"]) for g in got) > 3  # rollbacks happened
    scorer = Detector.open(causal).scorer()
    assert max(len(scorer.tokenizer(p + c)["input_ids"]) for p, c, _ in recorder.calls) > 2 * WINDOW
    check = score_differences(scorer, recorder.calls, judge.threshold, judge.lang)
    assert check["words"] > 60 and check["unmatched"] == 0
    assert check["max_abs_diff"] < TOLERANCE and check["flags_differing"] == 0


def test_resampling_rolls_the_judge_cache_back(generator, causal):
    """With rejections on, the cached judge leads to exactly the text and interventions that a judge
    recomputing every word from scratch leads to (same seed)."""
    from hades_ray.guard.judge import open_judge

    tokenizer, model = generator
    sampling = Sampling(max_new_tokens=30, top_k=20, no_end=True)
    cached = open_judge(str(causal), None, "all", lang=ENGLISH)
    threshold = _threshold(cached, PROMPTS, sampling, model, tokenizer)
    runs = []
    for judge in (cached, ScratchJudge(causal, threshold)):
        got = guarded_generate(model, tokenizer, PROMPTS, sampling, judge, GuardSettings(threshold, 2), 7)
        runs.append(got)
    assert sum(len(g["interventions"]) for g in runs[0]) > 3
    for a, b in zip(*runs):
        assert a["tokens"] == b["tokens"]
        assert [{k: e[k] for k in ("token_position", "rejected", "replacement")} for e in a["interventions"]] == [
            {k: e[k] for k in ("token_position", "rejected", "replacement")} for e in b["interventions"]
        ]
        assert np.allclose([w["p"] for w in a["scores"]], [w["p"] for w in b["scores"]], atol=TOLERANCE, rtol=0)


class RejectOnce:
    """Rejects the first judged word of every row once, then accepts everything."""

    threshold = 0.5

    def begin(self, rows: int) -> None:
        self.rejected = set()

    def score_chunks(self, requests):
        out = []
        for row, _, chunk in requests:
            out.append([{"start": 0, "end": len(chunk), "word": chunk.strip(), "p": float(row not in self.rejected)}])
            self.rejected.add(row)
        return out


def test_after_a_rollback_the_generator_continues_as_a_fresh_run_of_the_kept_text(generator):
    """Greedy decoding: after the rejected word is replaced, every row's continuation is the one
    ``model.generate`` gives the prompt plus the kept tokens, so nothing of the rejected word is left
    in the generator's cache."""
    tokenizer, model = generator
    sampling = Sampling(max_new_tokens=12, top_k=1, no_end=True)
    got = guarded_generate(model, tokenizer, PROMPTS, sampling, RejectOnce(), GuardSettings(0.5, 1), 0)
    end = model.generation_config.eos_token_id
    for prompt, g in zip(PROMPTS, got):
        (event,) = g["interventions"]
        cut = event["token_position"] + 1  # the replacement's first token: drawn without the rejected one
        prompt_ids = tokenizer(prompt)["input_ids"]
        ids = torch.tensor([prompt_ids + g["tokens"][:cut]])
        out = model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            do_sample=False,
            max_new_tokens=len(g["tokens"]) - cut,
            suppress_tokens=[end],
        )
        assert out[0, ids.shape[1] :].tolist() == g["tokens"][cut:]


def test_encoder_judge_scores_all_rows_together_as_one_by_one_and_as_score(encoder):
    from hades_ray.guard.judge import open_judge
    from hades_ray.detect.detector import Detector
    from hades_ray.score.words import find_targets

    judge = open_judge(str(encoder), 0.5, "all", lang=ENGLISH)
    assert type(judge).__name__ == "ViewJudge"
    texts = [p + " and then the river flows north past three old mills to the sea" for p in PROMPTS]
    requests = [(k, t[: t.rindex(" ")], t[t.rindex(" ") :]) for k, t in enumerate(texts)]
    requests += [(k, t[: t.index(" then")], " then river") for k, t in enumerate(texts)]
    together = judge.score_chunks(requests)
    alone = [judge.score_chunks([r])[0] for r in requests]
    assert together == alone and all(together)
    scorer = Detector.open(encoder).scorer()
    for (_, prefix, chunk), scored in zip(requests, together):
        targets = find_targets(prefix + chunk, "all", lang=ENGLISH)
        p = dict(zip((targets.starts[f] for f in targets.first), scorer.score([targets])[0]))
        assert [w["p"] for w in scored] == [p[len(prefix) + w["start"]] for w in scored]


@pytest.mark.parametrize("seed", [0, 1])
def test_a_causal_judge_that_never_flags_leaves_generates_tokens(generator, causal, seed):
    from hades_ray.guard.judge import open_judge

    tokenizer, model = generator
    sampling = Sampling(max_new_tokens=20, top_k=20, temperature=0.9)
    judge = open_judge(str(causal), 1.5, "all", lang=ENGLISH)  # p(H) is at most 1: nothing reaches the threshold
    got = guarded_generate(model, tokenizer, PROMPTS, sampling, judge, GuardSettings(1.5, 3), seed)
    end = model.generation_config.eos_token_id
    expected = _generate_ids(model, tokenizer, PROMPTS, seed, max_new_tokens=20, top_k=20, temperature=0.9)
    assert [g["tokens"] for g in got] == [_strip(e, end) for e in expected]
    assert any(g["scores"] for g in got)  # the judge ran (a row may draw the end token first)


def test_generations_kept_from_a_detector_retrained_in_the_same_folder_are_stale(encoder):
    """The generate job's settings digest holds the judge's identity, not only its folder's name: a detector
    retrained (rewritten) in place makes the finished shards stale, as `hades-ray score`'s do."""
    import os

    from hades_ray.guard.runner import job_digest
    from hades_ray.guard.stages import GenerateJob

    job = GenerateJob(
        generator="local:gpt2", sampling=Sampling(max_new_tokens=4), language=ENGLISH, detector=str(encoder)
    )
    before = job_digest(job, 8)
    assert job_digest(job, 8) == before
    weights = next(p for p in encoder.iterdir() if p.suffix == ".safetensors")
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # as a retrain in place leaves it
    assert job_digest(job, 8) != before
