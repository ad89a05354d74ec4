"""Span alignment and windows; online scores cannot see the text after the span (bit-identical)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hades_ray.detect.spans import context_window, encode_spans


@pytest.fixture(scope="module")
def micro(micro_home):
    from hades_ray.detect.model import build_classifier
    from hades_ray.models.registry import resolve_model

    torch.manual_seed(0)
    return build_classifier(resolve_model("local:mlm"), {"pooling": "max", "mlp_layers": 2, "freeze": "last_layer"})


def test_span_subwords_found_through_offsets(micro):
    tokenizer, _ = micro
    words = ["the", "painter", "moved", "to", "kaiserslautern", "in", "1901", "."]
    enc = encode_spans(tokenizer, [{"words": words, "start": 4, "end": 4}], "offline", 64)
    ids = enc["input_ids"][0][enc["span_mask"][0]].tolist()
    assert tokenizer.decode(ids).replace(" ", "") == "kaiserslautern"


def test_windows_cut_at_word_boundaries(micro):
    tokenizer, _ = micro
    words = [f"w{i}" for i in range(200)]
    view = context_window(tokenizer, words, 100, 101, "offline", 24)
    kept = view["text"].split(" ")
    assert "w100" in kept and "w101" in kept and set(kept) <= set(words)
    assert view["text"][view["char_start"] : view["char_end"]] == "w100 w101"
    assert len(tokenizer(view["text"])["input_ids"]) <= 24
    online = context_window(tokenizer, words, 100, 101, "online", 24)
    assert online["text"].endswith("w100 w101") and len(tokenizer(online["text"])["input_ids"]) <= 24


def test_online_score_ignores_text_after_the_span(micro):
    from hades_ray.detect.views import score_spans

    tokenizer, model = micro
    words = ["the", "museum", "opened", "in", "vienna", "in", "1891", "and"]
    base = {"words": words + ["it", "has", "stayed", "open", "ever", "since", "."], "start": 4, "end": 4}
    other = {"words": words + ["zebras", "sang", "loudly", "on", "the", "moon", "all", "night"], "start": 4, "end": 4}
    online = [score_spans(model, tokenizer, [item], "online", 64)[0] for item in (base, other)]
    assert online[0] == online[1]  # bit-identical, not approximately equal
    offline = [score_spans(model, tokenizer, [item], "offline", 64)[0] for item in (base, other)]
    assert offline[0] != offline[1]  # the offline detector does read the right context


def test_pooling_and_freezing(micro_home):
    from hades_ray.detect.model import build_classifier
    from hades_ray.models.registry import resolve_model

    src = resolve_model("local:mlm")
    for freeze, expected in (("all", 0), ("none", None)):
        _, model = build_classifier(src, {"pooling": "mean", "mlp_layers": 1, "freeze": freeze})
        trainable = [n for n, p in model.named_parameters() if p.requires_grad and n.startswith("backbone.")]
        assert (len(trainable) == 0) if expected == 0 else len(trainable) > 10
    _, model = build_classifier(src, {"pooling": "max", "mlp_layers": 2, "freeze": "last_layer"})
    trainable = {n.split(".")[3] for n, p in model.named_parameters() if p.requires_grad and "layer." in n}
    assert trainable == {"1"}  # the micro model has 2 layers: only the last trains
    assert [type(m).__name__ for m in model.head] == ["Linear", "Tanh", "Linear"]
    assert model.head[0].out_features == model.backbone.config.hidden_size // 2
    assert np.isfinite(1.0)


def test_word_windows_count_context_words_around_the_span(micro):
    """detect.window_unit=words: ``window`` words besides the span, split around it offline (a short side
    leaves its share to the other) and all before it online: our reading of Fig. 6's
    window, whose unit the paper does not give."""
    tokenizer, _ = micro
    words = [f"w{i}" for i in range(200)]

    def kept(start, end, mode, window):
        view = context_window(tokenizer, words, start, end, mode, window, "words")
        assert view["text"][view["char_start"] : view["char_end"]] == " ".join(words[start : end + 1])
        return view["text"].split(" ")

    assert kept(100, 101, "offline", 5) == [f"w{i}" for i in range(98, 105)]  # 2 before, 3 after
    assert kept(100, 101, "online", 5) == [f"w{i}" for i in range(95, 102)]  # 5 before, nothing after
    assert kept(1, 1, "offline", 5) == [f"w{i}" for i in range(0, 6)]  # 1 word before: 4 after
    assert kept(198, 198, "offline", 5) == [f"w{i}" for i in range(194, 200)]  # 1 word after: 4 before
    assert kept(100, 100, "offline", 160) == [f"w{i}" for i in range(20, 181)]
    assert kept(3, 3, "online", 160) == [f"w{i}" for i in range(0, 4)]
    assert kept(10, 12, "offline", 1000) == words  # a window longer than the text: all of it


def test_window_5_words_accepted_5_tokens_refused():
    from hades_ray.config import load_config
    from hades_ray.errors import ConfigError

    config = load_config("local", None, ["detect.window_unit=words", "detect.window=5"])
    assert (config.detect.window, config.detect.window_unit) == (5, "words")
    with pytest.raises(ConfigError, match="detect.window must be >= 8 tokens"):
        load_config("local", None, ["detect.window=5"])
    with pytest.raises(ConfigError, match="window_unit"):
        load_config("local", None, ["detect.window_unit=sentences"])


def test_a_word_window_detector_scores_with_its_own_window(micro):
    """The unit reaches scoring: a right context beyond the word window changes nothing offline."""
    from hades_ray.detect.views import score_spans

    tokenizer, model = micro
    words = ["the", "museum", "opened", "in", "vienna", "in", "1891", "and", "it", "stayed", "open"]
    base = {"words": words + ["ever", "since", "."], "start": 4, "end": 4}
    other = {"words": words + ["zebras", "sang", "loudly"], "start": 4, "end": 4}
    near = [score_spans(model, tokenizer, [item], "offline", 6, 8, "words")[0] for item in (base, other)]
    assert near[0] == near[1]  # 3 words either side: the differing tail is out of sight
    wide = [score_spans(model, tokenizer, [item], "offline", 16, 8, "words")[0] for item in (base, other)]
    assert wide[0] != wide[1]
