"""The probe (``hades-ray train --detector probe``): an online head on the generator's own states, trained
through the span store, and its watcher on ``model.generate`` (``hades_ray/guard/probe.py``)."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from hades_ray import Detector
from hades_ray.config import load_config
from hades_ray.detect.probe import POSITION_MARGIN
from hades_ray.detect.synthetic import toy_instances
from hades_ray.errors import ConfigError
from hades_ray.io.hades_format import write_instances

OVERRIDES = ["detect.backbone=local:gpt2", "detect.epochs=2", "detect.batch_size=8", "detect.lr=0.01"]


def _train(folder, *extra: str):
    from hades_ray.train import fit

    train = write_instances(toy_instances(24, seed=1), folder / "train.txt")
    valid = write_instances(toy_instances(8, seed=2), folder / "valid.txt")
    with pytest.MonkeyPatch.context() as patch:  # a head on stored vectors trains in this process: no Ray
        patch.setattr(fit, "_ray", lambda config: None)
        return fit.train_detector(load_config(overrides=[*OVERRIDES, *extra]), train, valid, folder / "probe", "probe")


@pytest.fixture(scope="module")
def probe_folder(micro_home, tmp_path_factory):
    return _train(tmp_path_factory.mktemp("probe"), "detect.layer=1")


def test_a_probe_is_a_frozen_online_span_classifier_on_the_generators_whole_context(probe_folder):
    meta = json.loads((probe_folder / "detector.json").read_text())
    assert meta["probe"] is True and meta["type"] == "transformer" and meta["backbone"] == "local:gpt2"
    assert (meta["mode"], meta["freeze"], meta["window"], meta["layer"]) == ("online", "all", 512 - POSITION_MARGIN, 1)
    summary = json.loads((probe_folder / "summary.json").read_text())
    assert summary["detector"] == "probe" and summary["span_reps"]["train"]["shards_made_now"] == 1
    det = Detector.open(probe_folder)
    assert det.is_probe and det.mode == "online"
    assert [w["word"] for w in det.score("the river was built in paris", words="all")["words"]][-1] == "paris"


def test_a_probe_needs_a_causal_backbone(micro_home, tmp_path):
    with pytest.raises(ConfigError, match="a probe reads a generator's own states"):
        _train(tmp_path, "detect.backbone=local:mlm")


PROMPT, CONTINUATION = "the river was built in", " paris and it remained there for many years"


class Forced:
    """A logits processor that makes ``generate`` write ``tokens``: the test's continuation, whatever the
    micro model's random weights would pick."""

    def __init__(self, tokens: list[int]):
        self.tokens = tokens

    def __call__(self, input_ids, scores):
        forced = torch.full_like(scores, float("-inf"))
        step = min(input_ids.shape[1] - self.start, len(self.tokens) - 1)
        forced[:, self.tokens[step]] = 0.0
        return forced


def _generate(model, tokenizer, criteria=(), prompt: str = PROMPT):
    from transformers import LogitsProcessorList, StoppingCriteriaList

    ids = tokenizer(prompt, return_tensors="pt").input_ids[:, :-1]  # [SEP] ends no text's start (score cuts it)
    forced = Forced(tokenizer(prompt + CONTINUATION).input_ids[ids.shape[1] : -1])
    forced.start = ids.shape[1]
    return model.generate(ids, max_new_tokens=len(forced.tokens), do_sample=False, pad_token_id=0,
                          logits_processor=LogitsProcessorList([forced]),
                          stopping_criteria=StoppingCriteriaList(list(criteria)))  # fmt: skip


# The generator's cached one-token forwards against score's one forward over the text: float32 rounding
# apart (measured on the micro GPT-2, max and mean pooling: 6e-8 at the last layer, 0 at layers 0 and 1).
TOLERANCE = 1e-6


@pytest.fixture(params=[(1, "max"), (-1, "mean")], ids=["layer1-max", "last-mean"])
def probe_at(request, probe_folder, tmp_path):
    """The trained probe, or a copy of it reading another layer with another pooling (the head fits any)."""
    layer, pooling = request.param
    if layer == 1:
        return probe_folder
    shutil.copytree(probe_folder, tmp_path / "probe")
    meta = json.loads((tmp_path / "probe" / "detector.json").read_text())
    meta.pop("layer")
    (tmp_path / "probe" / "detector.json").write_text(json.dumps(meta | {"pooling": pooling}))
    return tmp_path / "probe"


def test_each_generated_words_p_is_scores_for_the_same_text(probe_at, generator):
    tokenizer, model = generator
    det = Detector.open(probe_at)
    with det.probe(model, tokenizer, words="all", stop=False) as probe:
        out = _generate(model, tokenizer, [probe])
    text = PROMPT + CONTINUATION
    assert tokenizer.decode(out[0], skip_special_tokens=True) == text
    # The last word is still being written when generate stops: its state would need one more forward.
    assert [w["word"] for w in probe.words[0]] == CONTINUATION.split()[:-1]
    scored = {(w["start"], w["end"]): w for w in det.score(text, words="all")["words"]}
    for word in probe.words[0]:
        assert set(word) == {"word", "start", "end", "p", "flag"}
        assert word["word"] == scored[(word["start"], word["end"])]["word"] == text[word["start"] : word["end"]]
        assert word["p"] == pytest.approx(scored[(word["start"], word["end"])]["p"], abs=TOLERANCE)
        assert word["flag"] == (word["p"] >= det.threshold)


def test_the_probe_adds_no_forward_and_loads_no_backbone(probe_folder, generator, monkeypatch):
    from transformers.models.gpt2 import modeling_gpt2

    from hades_ray.detect import model as span_model

    tokenizer, model = generator
    forwards, original = [], modeling_gpt2.GPT2Model.forward
    monkeypatch.setattr(
        modeling_gpt2.GPT2Model, "forward", lambda self, *a, **k: forwards.append(1) or original(self, *a, **k)
    )
    _generate(model, tokenizer)
    plain, forwards[:] = len(forwards), []
    monkeypatch.setattr(span_model, "load_backbone", lambda *a, **k: pytest.fail("the probe loaded a backbone"))
    with Detector.open(probe_folder).probe(model, tokenizer, words="all", stop=False) as probe:
        _generate(model, tokenizer, [probe])
    assert len(forwards) == plain and probe.words[0]


def test_a_left_padded_batch_judges_each_row_as_alone(probe_folder, generator):
    """Rows of a batch padded on the left (prompts of different lengths): each row's words and p(H) are
    those of its prompt generated alone, to the cached forwards' rounding."""
    from transformers import LogitsProcessorList, StoppingCriteriaList

    tokenizer, model = generator
    det = Detector.open(probe_folder)
    prompts, tokens = ["the river was built in", "it"], tokenizer(CONTINUATION).input_ids[1:-1]

    def watched(texts: list[str]) -> list[list[dict]]:
        tokenizer.padding_side = "left"
        enc = tokenizer(texts, return_tensors="pt", padding=True, return_token_type_ids=False)
        forced = Forced(tokens)
        forced.start = enc["input_ids"].shape[1]
        with det.probe(model, tokenizer, words="all", stop=False) as probe:
            processors, criteria = LogitsProcessorList([forced]), StoppingCriteriaList([probe])
            model.generate(**enc, max_new_tokens=len(tokens), do_sample=False, pad_token_id=tokenizer.pad_token_id,
                           logits_processor=processors, stopping_criteria=criteria)  # fmt: skip
        return probe.words

    together = watched(prompts)
    for prompt, words in zip(prompts, together):
        (alone,) = watched([prompt])
        assert [w["word"] for w in words] == [w["word"] for w in alone] and len(words) >= 3
        assert all(a["p"] == pytest.approx(b["p"], abs=TOLERANCE) for a, b in zip(words, alone))


def test_a_row_stops_at_its_first_flagged_word(probe_folder, generator):
    tokenizer, model = generator
    with Detector.open(probe_folder).probe(model, tokenizer, threshold=0.0, words="all") as probe:
        out = _generate(model, tokenizer, [probe])
    assert probe.stopped[0]["word"] == "paris" and probe.stopped[0]["flag"]
    assert out.shape[1] < len(tokenizer(PROMPT + CONTINUATION).input_ids) - 1


def test_another_generator_or_a_detector_that_is_no_probe_is_refused(probe_folder, generator, causal_online):
    import copy

    from transformers import GPT2Config

    tokenizer, model = generator
    det = Detector.open(probe_folder)
    other_weights, other_config = copy.deepcopy(model), copy.deepcopy(model)
    with torch.no_grad():
        other_weights.get_input_embeddings().weight[0] += 1.0  # the same config and folder name, other weights
    other_config.config = GPT2Config(**{**model.config.to_dict(), "n_layer": 1})
    for other in (other_weights, other_config):
        with pytest.raises(ValueError, match="is another model: generate with the probe's own backbone"):
            det.probe(other, tokenizer)
    with pytest.raises(ValueError, match="is no probe"):
        Detector.open(causal_online).probe(model, tokenizer)


GUARD_PROMPTS = ["the city of", "in 1990 the band released their first album", "he was born in", "x"]


def _watched(det, model, tokenizer, prompt: str, new_ids: list[int]) -> list[dict]:
    """The watcher's words (``Detector.probe`` on ``model.generate``) for ``prompt`` continued by ``new_ids``."""
    from transformers import LogitsProcessorList, StoppingCriteriaList

    ids = tokenizer(prompt, return_tensors="pt").input_ids
    forced = Forced(new_ids)
    forced.start = ids.shape[1]
    with det.probe(model, tokenizer, words="all", stop=False) as probe:
        processors, criteria = LogitsProcessorList([forced]), StoppingCriteriaList([probe])
        model.generate(ids, max_new_tokens=len(new_ids), do_sample=False, pad_token_id=0,
                       logits_processor=processors, stopping_criteria=criteria)  # fmt: skip
    return probe.words[0]


def test_the_guard_reads_a_probe_from_the_generators_own_forwards(probe_folder, generator, monkeypatch):
    """``hades_ray.guarded_generate`` with a probe on its own generator adds no forward and loads no
    backbone; with words taken back and slots refilled, every kept word but the last has the watcher's
    p(H) on the final tokens (the last: the watcher never judges the word generate stops in)."""
    from transformers.models.gpt2 import modeling_gpt2

    from hades_ray import guarded_generate
    from hades_ray.detect import model as span_model

    tokenizer, model = generator
    det = Detector.open(probe_folder)
    monkeypatch.setattr(span_model, "load_backbone", lambda *a, **k: pytest.fail("the guard loaded a backbone"))
    forwards, original = [], modeling_gpt2.GPT2Model.forward
    monkeypatch.setattr(
        modeling_gpt2.GPT2Model, "forward", lambda self, *a, **k: forwards.append(1) or original(self, *a, **k)
    )
    settings = {"max_new_tokens": 12, "seed": 3, "words": "all", "no_end": True}
    judged = guarded_generate(model, tokenizer, GUARD_PROMPTS, det, threshold=1.0, **settings)
    guarded = len(forwards)
    forwards[:] = []
    assert [r["token_ids"] for r in guarded_generate(model, tokenizer, GUARD_PROMPTS, **settings)] == [
        r["token_ids"] for r in judged
    ]  # the guard off: model.generate, the same tokens
    # generate's forwards and the guarded loop's one more, which feeds the last token: the probe's judge of
    # the last word reads its state (generate never feeds the token it samples last)
    assert len(forwards) + 1 == guarded and all(r["words"] for r in judged)
    p = sorted(w["p"] for r in judged for w in r["words"])
    resampled = guarded_generate(model, tokenizer, GUARD_PROMPTS, det, threshold=p[len(p) // 2], slots=2, **settings)
    assert sum(len(r["events"]) for r in resampled) > 0
    # Words pair up by their end: a chunk that continues the prompt's last word ("album" + "pes") is judged
    # as the whole word, which the guard reports from the chunk on. Where the micro model's random tokens
    # join odd pieces (a letter, then a kana) the two cut words differently and do not pair; every pair agrees.
    kept, paired = 0, 0
    for record in resampled:
        watched = {w["end"]: w for w in _watched(det, model, tokenizer, record["prompt"], record["token_ids"])}
        for word in record["words"]:
            if word["end"] < len(record["text"]):
                kept += 1
                other = watched.get(word["end"])
                if other and other["start"] <= word["start"]:
                    paired += 1
                    assert word["p"] == pytest.approx(other["p"], abs=TOLERANCE)
    assert paired >= 0.75 * kept > 0


def test_the_probe_beside_the_span_classifier(probe_folder, causal_online, generator, tmp_path):
    from hades_ray.guard.probe_bench import compare_quality, generation_cost

    test = write_instances(toy_instances(8, seed=3), tmp_path / "test.txt")
    quality = compare_quality({"probe": probe_folder, "span": causal_online}, test)
    assert [quality[k]["n"] for k in ("probe", "span")] == [8, 8] and {"gmean", "auc", "h_f1"} <= set(quality["probe"])
    tokenizer, model = generator
    probe, span = Detector.open(probe_folder), Detector.open(causal_online)
    watchers = {"probe": lambda: probe.probe(model, tokenizer, stop=False),
                "span": lambda: span.stopping_criteria(tokenizer, threshold=1.0)}  # fmt: skip
    cost = generation_cost(model, tokenizer, ["the river was"], watchers, new_tokens=4, repeats=1)
    assert set(cost) == {"plain", "probe", "span"} and all(c["s_per_token"] > 0 for c in cost.values())


def test_the_guards_cost_counts_the_words_it_takes_back(probe_folder, generator):
    import copy

    from hades_ray.guard.probe_bench import guard_cost
    from hades_ray.guard.probe_judge import probe_guard_judge
    from hades_ray.guard.sampling import Sampling, prepare_tokenizer
    from hades_ray.text.languages import DEFAULT_LANGUAGE

    tokenizer, model = generator
    tokenizer = prepare_tokenizer(copy.deepcopy(tokenizer))
    det = Detector.open(probe_folder).detector
    judges = {
        k: (probe_guard_judge(det, model, cut, "all", lang=DEFAULT_LANGUAGE), 2)
        for k, cut in (("quiet", 1.0), ("all", 0.0))
    }
    cost = guard_cost(model, tokenizer, GUARD_PROMPTS, judges, Sampling(max_new_tokens=6, no_end=True), repeats=1)
    assert cost["plain"]["ratio"] == 1.0 and cost["quiet"]["words_taken_back"] == 0
    assert cost["quiet"]["ms_per_word_taken_back"] is None
    # threshold 0 flags every word: each is drawn again twice (its retries), so at least 2 per prompt
    assert cost["all"]["words_taken_back"] >= 2 * len(GUARD_PROMPTS) and cost["all"]["s_per_token"] > 0


def test_every_view_of_a_text_longer_than_the_context_fits_the_generators_positions():
    """A view cut inside a long text starts at a word without its leading space, which the kit's byte-level
    BPE may split into more tokens than the whole text gave it (258 for a 256-token window here): the
    probe's window leaves that room. On the offline kit's GPT-2 (skipped where it is not built)."""
    import os
    import random
    from pathlib import Path

    from hades_ray.detect.model import load_tokenizer
    from hades_ray.detect.probe import generator_config
    from hades_ray.detect.spans import context_window
    from hades_ray.perturb.packing import config_positions

    kit = Path(os.environ.get("HADES_GOLDEN_KIT_HOME") or Path.home() / ".cache" / "hades_ray") / "models" / "gpt2"
    if not (kit / "model.safetensors").is_file():
        pytest.skip(f"the offline kit's GPT-2 is not built at {kit} (make models)")
    tokenizer, positions = load_tokenizer(str(kit)), config_positions(generator_config(str(kit)))
    rng = random.Random(0)
    vocab = ["Linguistically", "Malacca", "bankruptcy", "Nicobar", "northeast", "1900", "km2", "the", "of", "Strait"]
    words = [rng.choice(vocab) for _ in range(2 * positions)]
    window = positions - POSITION_MARGIN
    views = [context_window(tokenizer, words, k, k, "online", window)["text"] for k in range(positions, 2 * positions)]
    assert max(len(ids) for ids in tokenizer(views)["input_ids"]) <= positions
