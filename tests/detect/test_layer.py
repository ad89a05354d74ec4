"""``detect.layer``: the hidden state a span classifier pools, recorded where it is not the last, part of
the span store's view, and read by every scoring path (score, the store, a stream)."""

from __future__ import annotations

import pytest
import torch

from hades_ray import Detector
from hades_ray.config import HadesConfig
from hades_ray.detect.reps import View
from hades_ray.detect.synthetic import random_detector
from hades_ray.train.transformer import detector_settings

TEXT = "the river was built in paris and it remained there"
SETTINGS = {"backbone": "local:gpt2", "revision": None, "mode": "online", "window": 64, "pooling": "max"}


def test_the_last_layer_is_what_a_description_without_the_key_means():
    config = HadesConfig()
    assert "layer" not in detector_settings(config, "online")
    config.detect.layer = 1
    assert detector_settings(config, "online")["layer"] == 1
    last, old = View.of({**SETTINGS, "layer": -1}), View.of(SETTINGS)
    assert "layer" not in last.plain() and last.digest("data") == old.digest("data")  # old stores still read
    assert View.of({**SETTINGS, "layer": 1}).plain()["layer"] == 1
    assert View.of({**SETTINGS, "layer": 1}).digest("data") != old.digest("data")


@pytest.fixture(scope="module", params=["gpt2", "mlm"])
def layered(request, micro_home, tmp_path_factory):
    """(backbone folder, detector at layer 1, detector at the last layer), the same random head."""
    backbone = str(micro_home / "models" / request.param)
    root = tmp_path_factory.mktemp("layer")
    return backbone, *(random_detector(root / str(k), backbone, "online", 64, seed=2, layer=k) for k in (1, -1))


def test_score_pools_the_chosen_hidden_state(layered):
    from transformers import AutoModel

    backbone, first, last = layered
    det = Detector.open(first)
    tokenizer, model = det.detector.load_model()
    ids = tokenizer("paris", return_tensors="pt").input_ids
    real = ids[0] != tokenizer.cls_token_id  # the word's own tokens (its view is it alone, specials aside)
    real &= ids[0] != tokenizer.sep_token_id
    with torch.no_grad():
        states = AutoModel.from_pretrained(backbone)(input_ids=ids, output_hidden_states=True).hidden_states[1][0]
        p = torch.softmax(model.head(states[real].max(0).values[None]), -1)[0, 1].item()
    assert det.score("paris", words="all")["words"][0]["p"] == pytest.approx(p, abs=1e-5)
    assert Detector.open(last).score("paris", words="all")["words"][0]["p"] != pytest.approx(p, abs=1e-5)


def test_the_store_and_a_stream_pool_it_too(layered):
    from hades_ray.detect.model import load_backbone
    from hades_ray.detect.reps import head_scores, span_vectors
    from hades_ray.models.registry import resolve_model

    _, first, _ = layered
    det = Detector.open(first)
    whole = det.score(TEXT, words="all")["words"]
    words = TEXT.split()
    view = View.of(det.detector.meta)
    tokenizer, backbone = load_backbone(resolve_model(view.backbone), None, view.layer)
    items = [{"words": words, "start": k, "end": k} for k in range(len(words))]
    stored = head_scores(det.detector.load_head(), span_vectors(backbone.eval(), tokenizer, items, view, 8)["max"])
    assert list(stored) == pytest.approx([w["p"] for w in whole], abs=1e-5)
    stream, fed = det.stream(words="all"), []
    for cut in range(5, len(TEXT) + 5, 5):
        fed += stream.feed(TEXT[: min(cut, len(TEXT))], final=cut >= len(TEXT))
    assert [w["p"] for w in fed] == pytest.approx([w["p"] for w in whole], abs=1e-6)
