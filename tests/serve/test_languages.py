"""``hades-ray serve``'s scorer in other Wiki-40B languages: each request is cut in its own language within
one batch, with character offsets into its text, and an unknown language is refused in one line (over
HTTP, on the served app of tests/serve/test_serve.py: the bytes ``score --language`` writes, a 422, an
Arabic heatmap page right to left)."""

from __future__ import annotations

import json

import pytest

from hades_ray.config import load_config
from hades_ray.serve.scoring import RequestError, ServiceScorer, records_body
from tests.score.test_languages import SAMPLES
from tests.score.test_score import TEXTS
from tests.detectors import detector_folder

SETTINGS = ["spacy_model=blank", "languages.en.spacy_model=auto", "serve.num_cpus=0.5"]


@pytest.fixture(scope="module")
def detector(micro_home, tmp_path_factory):
    return detector_folder(tmp_path_factory.mktemp("det") / "gpt2", str(micro_home / "models" / "gpt2"), "online", 160)


@pytest.fixture(scope="module")
def scorer(detector):
    return ServiceScorer(str(detector), load_config(None, None, SETTINGS))


def _records(scorer, *requests: tuple[list[str], str | None]) -> list[list[dict]]:
    """Each request's records, all requests' texts scored in one batch (as ``@serve.batch`` does)."""
    rows = scorer.score_tables([scorer.table(texts, lang) for texts, lang in requests])
    return [json.loads(records_body(r, scorer.threshold))["results"] for r in rows]


def test_each_request_is_cut_in_its_own_language_within_one_batch(scorer):
    requests = [([text], lang) for lang, text in SAMPLES.items()] + [([TEXTS[0]], None)]
    batch = _records(scorer, *requests)
    for ([text], lang), (record,) in zip(requests, batch):
        assert record.get("language") == lang  # English (the service's) carries none
        assert record["words"] and all(text[w["start"] : w["end"]] == w["word"] for w in record["words"])
    assert _records(scorer, ([TEXTS[0]], None)) == batch[-1:]  # the same alone as beside other languages
    assert {w["word"] for w in batch[list(SAMPLES).index("hi")][0]["words"]} >= {"हिन्दी", "राजधानी"}


def test_an_unknown_language_is_refused_with_one_line(scorer):
    with pytest.raises(RequestError) as refused:
        scorer.table(["a text"], "xx")
    assert refused.value.status == 422 and "unknown language 'xx'" in refused.value.reason
    assert "\n" not in refused.value.reason
