"""``hades-ray serve`` in other Wiki-40B languages: a request names its texts' language (default: the
service's), gets the bytes ``hades-ray score --language`` writes, with character offsets into its text;
an unknown language is a 422 with one line; an Arabic heatmap page is right to left."""

from __future__ import annotations

import json

import httpx
import pytest

from hades_ray.cli import main
from hades_ray.config import load_config
from hades_ray.serve.scoring import RequestError, ServiceScorer, records_body
from tests.score.test_languages import SAMPLES
from tests.score.test_score import TEXTS
from tests.detectors import detector_folder
from tests.serve import running

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


@pytest.fixture(scope="module")
def client(detector, ray_local):
    with running.served(detector, SETTINGS, "", "hades-languages") as url:
        with httpx.Client(base_url=url, timeout=60) as c:
            yield c


def test_served_bytes_are_what_score_writes_in_that_language(client, detector, tmp_path):
    reply = client.post("/score", json={"text": SAMPLES["ar"], "language": "ar"})
    out = tmp_path / "out"
    sets = [x for s in SETTINGS for x in ("--set", s)]
    args = ["score", "--model", str(detector), "--output", str(out), "--executor", "local", "--text", SAMPLES["ar"]]
    assert main([*args, "--language", "ar", *sets]) == 0
    line = (out / "scores.jsonl").read_text(encoding="utf-8").strip()
    assert reply.status_code == 200 and reply.content == ('{"results": [' + line + "]}").encode()
    assert client.get("/healthz").json()["language"] == "en"


def test_a_bad_language_is_a_422_with_one_line_and_the_arabic_page_is_right_to_left(client):
    for body in ({"text": "a text", "language": "xx"}, {"text": "a text", "language": 3}):
        reply = client.post("/score", json=body)
        assert reply.status_code == 422 and reply.json()["error"].startswith("language")
        assert "\n" not in reply.json()["error"]
    page = client.get("/heatmap", params={"text": SAMPLES["ar"], "language": "ar"})
    assert page.status_code == 200 and '<p class="text" dir="rtl" lang="ar">' in page.text
    assert client.get("/heatmap", params={"text": "a text", "language": "xx"}).status_code == 422
