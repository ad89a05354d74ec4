"""A stream's words in any chunking are one ``score`` of the final text, for every online backbone and
pooling, and a feed runs only its new words through the detector, however long the text before them."""

from __future__ import annotations

import random

import pytest

from hades_ray import Detector

DETECTORS = ["causal_online", "causal_online_mean", "encoder_online", "encoder_online_mean"]
CAUSAL_TOLERANCE = 1e-6  # |p(H) stream - p(H) score|: a cached window's forward against score's whole one
# Words in a long stream: enough to outgrow each detector's window (160 tokens, 48, 32, 32) at least twice.
LONG = {"causal_online": 300, "causal_online_mean": 150, "encoder_online": 100, "encoder_online_mean": 100}


def long_text(words: int, seed: int = 0) -> str:
    """Sentences of names, places, years and plain words, about ``words`` units long."""
    rng = random.Random(seed)
    names = ["Marie Curie", "Ada Lovelace", "Alan Turing", "Niels Bohr", "Emmy Noether"]
    places = ["Warsaw", "Paris", "London", "New York", "Copenhagen", "Vienna"]
    things = ["radium", "engines", "machines", "atoms", "rings", "bridges", "rivers"]
    out = []
    while sum(len(s.split()) for s in out) < words:
        out.append(
            f"In {rng.randint(1800, 1990)}, {rng.choice(names)} moved to {rng.choice(places)} and wrote "
            f"{rng.randint(2, 40)} papers about the {rng.choice(things)} of {rng.choice(places)}."
        )
    return " ".join(out)


def pieces(text: str, how: str, seed: int = 0) -> list[str]:
    """The text so far at each feed: a character, a word, or an OpenAI stream's deltas (1-12 characters) at a time."""
    if how == "chars":
        cuts = range(1, len(text) + 1)
    elif how == "words":
        cuts = [k for k in range(1, len(text)) if text[k] == " "] + [len(text)]
    else:
        rng, cuts, at = random.Random(seed), [], 0
        while at < len(text):
            at = min(len(text), at + rng.randint(1, 12))
            cuts.append(at)
    return [text[:cut] for cut in cuts]


def streamed(det, text: str, how: str, words: str) -> list[dict]:
    stream, got = det.stream(words=words), []
    so_far = pieces(text, how)
    for k, piece in enumerate(so_far):
        got += stream.feed(piece, final=k == len(so_far) - 1)
    return got


def assert_same_words(which: str, got: list[dict], whole: list[dict]) -> None:
    if which.startswith("encoder"):  # each word's own view: the very forward score runs, the same bits
        assert got == whole
        return
    assert [(w["word"], w["start"], w["end"]) for w in got] == [(w["word"], w["start"], w["end"]) for w in whole]
    assert [w["p"] for w in got] == pytest.approx([w["p"] for w in whole], abs=CAUSAL_TOLERANCE)


@pytest.mark.parametrize("which", DETECTORS)
@pytest.mark.parametrize("how,size", [("chars", 40), ("words", "long"), ("deltas", "long")])
def test_any_chunking_gives_one_score_of_the_final_text(which, how, size, request):
    det = Detector.open(request.getfixturevalue(which))
    text = long_text(LONG[which] if size == "long" else size)
    assert_same_words(which, streamed(det, text, how, "all"), det.score(text, words="all")["words"])


@pytest.mark.parametrize("which", ["causal_online", "encoder_online"])
def test_content_words_and_entities_as_score_finds_them(which, request):
    det = Detector.open(request.getfixturevalue(which))
    text = long_text(120, seed=1)  # past the 48 units spaCy reads before the first pending word
    whole = det.score(text)["words"]
    assert any(" " in w["word"] for w in whole)  # entities scored whole ("New York", "Marie Curie")
    assert_same_words(which, streamed(det, text, "deltas", "content"), whole)


class Counting:
    """Tokens through the backbone's forwards, and characters through the spaCy pipeline, per feed."""

    def __init__(self, det, words: str):
        self.stream = det.stream(words=words)
        self.tokens = 0
        backbone = self.stream.scored.judge.scorer.model.backbone
        backbone.register_forward_pre_hook(self._count, with_kwargs=True)

    def _count(self, module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        self.tokens += ids.numel()

    def feed(self, text: str) -> int:
        before = self.tokens
        self.stream.feed(text)
        return self.tokens - before


@pytest.mark.parametrize("which", DETECTORS)
def test_a_feed_runs_its_new_words_not_the_text_before_them(which, request):
    from hades_ray.models.fixed_rows import MIN_FORWARD_TOKENS

    det = Detector.open(request.getfixturevalue(which))
    counting = Counting(det, "all")
    so_far = pieces(long_text(420, seed=2), "words")
    cost = [counting.feed(piece) for piece in so_far]
    # A feed forwards its new words' views (an encoder: each at most the window, lifted to
    # MIN_FORWARD_TOKENS rows) or extends the cached window, re-encoding one window at most (a causal
    # backbone): what the window allows, at word 350 as at word 50. Scoring the text so far forwarded
    # every word's view, or every window of the text.
    bound = 2 * (det.detector.window + MIN_FORWARD_TOKENS)
    assert 0 < max(cost[30:100]) and max(cost[320:400]) <= bound
    assert sum(cost[320:400]) <= 1.5 * sum(cost[30:110]) + 3 * bound


def test_spacy_reads_a_bounded_tail(encoder_online, monkeypatch):
    from hades_ray.score import stream as stream_module

    read = []
    real = stream_module.find_targets

    def counting(text, *args, **kwargs):
        read.append(len(text))
        return real(text, *args, **kwargs)

    monkeypatch.setattr(stream_module, "find_targets", counting)
    stream = Detector.open(encoder_online).stream()
    for piece in pieces(long_text(180, seed=3), "words"):
        stream.feed(piece)
    # at word 60 the text is past the context (48 units) already; at word 150 it is 2.5 times longer
    assert max(read[150:]) <= max(read[60:100]) * 1.25  # what spaCy reads stays the context's, not the text's
