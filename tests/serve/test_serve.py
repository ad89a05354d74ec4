"""``hades-ray serve``'s application on loopback, through a real HTTP client: the bytes ``hades-ray score``
writes, words as a text streams in, a 4xx with a one-line reason for every bad request, the bearer
token, an inert ``<script>`` in the heatmap page, a short load test, and a text in another language (the
bytes ``score --language`` writes, a 422 for an unknown one, an Arabic page right to left). One app, the
package's (tests/serve/conftest.py)."""

from __future__ import annotations

import json

import httpx
import numpy as np
import pytest

from hades_ray.cli import main
from tests.score.test_languages import SAMPLES
from tests.score.test_score import TEXTS, _Elements
from tests.serve import running
from tests.serve.running import AUTH, MAX_BYTES, MAX_CHARS, MAX_TEXTS, SETTINGS, TOKEN


@pytest.fixture(scope="module")
def client(url):
    with httpx.Client(base_url=url, headers=AUTH, timeout=60) as c:
        yield c


def _cli_scores(detector, tmp_path, *args: str) -> list[str]:
    out = tmp_path / "out"
    sets = [x for s in SETTINGS for x in ("--set", s)]
    assert main(["score", "--model", str(detector), "--output", str(out), "--executor", "local", *sets, *args]) == 0
    return (out / "scores.jsonl").read_text(encoding="utf-8").splitlines()


def test_score_gives_the_bytes_hades_ray_score_writes(client, detector, tmp_path):
    one = client.post("/score", json={"text": TEXTS[0]})
    assert one.status_code == 200
    (line,) = _cli_scores(detector, tmp_path / "one", "--text", TEXTS[0])
    assert one.content == ('{"results": [' + line + "]}").encode()

    many = client.post("/score", json={"texts": TEXTS, "threshold": 0.4}).json()["results"]
    data = tmp_path / "texts.jsonl"
    data.write_text("".join(json.dumps({"id": f"text:{k + 1}", "text": t}) + "\n" for k, t in enumerate(TEXTS)))
    lines = _cli_scores(detector, tmp_path / "many", "--input", str(data), "--threshold", "0.4")
    for served, line in zip(many, lines, strict=True):
        written = json.loads(line)
        assert served.pop("source") == served["id"] and written.pop("source").endswith(":" + served["id"][5:])
        assert json.dumps(served, ensure_ascii=False) == json.dumps(written, ensure_ascii=False)
    assert any(w["flag"] for r in many for w in r["words"]) or all(w["p"] < 0.4 for r in many for w in r["words"])


def test_score_next_gives_each_completed_word_once_as_the_text_streams(client):
    text = TEXTS[0] + " " + TEXTS[2]
    streamed, since, cut = [], 0, 0
    while cut < len(text):
        cut = min(len(text), cut + 7)
        reply = client.post("/score/next", json={"text": text[:cut], "since": since}).json()
        assert all(w["end"] < cut and w["start"] >= since for w in reply["words"])  # complete, and new
        streamed += reply["words"]
        since = reply["next"]
    streamed += client.post("/score/next", json={"text": text, "since": since, "final": True}).json()["words"]
    whole = client.post("/score/next", json={"text": text, "final": True}).json()["words"]
    key = [(w["word"], w["start"], w["end"]) for w in whole]
    assert [(w["word"], w["start"], w["end"]) for w in streamed] == key and len(key) > 20
    threshold = client.get("/healthz").json()["threshold"]
    assert all(w["flag"] == (w["p"] >= threshold) for w in streamed + whole)
    np.testing.assert_allclose([w["p"] for w in streamed], [w["p"] for w in whole], atol=1e-6)
    scored = client.post("/score", json={"text": text}).json()["results"][0]["words"]
    assert whole == scored  # the very word records of /score, the same bits
    unfinished = client.post("/score/next", json={"text": "The river flows nor"}).json()
    assert [w["word"] for w in unfinished["words"]] == ["The", "river", "flows"] and unfinished["next"] == 15


def test_every_surface_gives_the_one_word_record(client, detector, micro_home):
    """``det.score``, ``det.stream``, the stopping criterion, ``POST /score`` and ``POST /score/next`` (issue
    46): one record, ``{"word", "start", "end", "p", "flag"}`` (``hades_ray/score/word_record.py``)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from hades_ray import Detector
    from hades_ray.score.word_record import WordRecord

    keys = list(WordRecord.__annotations__)
    assert keys == ["word", "start", "end", "p", "flag"]
    text = "Marie Curie was born in Warsaw in 1867."
    det = Detector.open(detector)
    surfaces = {
        "det.score": det.score(text, words="all")["words"],
        "det.stream": det.stream(words="all").feed(text, final=True),
        "/score": client.post("/score", json={"text": text}).json()["results"][0]["words"],
        "/score/next": client.post("/score/next", json={"text": text, "final": True}).json()["words"],
    }
    folder = str(micro_home / "models" / "gpt2")
    tokenizer, model = AutoTokenizer.from_pretrained(folder), AutoModelForCausalLM.from_pretrained(folder).eval()
    stop = det.stopping_criteria(tokenizer, threshold=0.0, words="all")  # the first word written stops it
    inputs = tokenizer("The city of", return_tensors="pt", return_token_type_ids=False)
    model.generate(**inputs, stopping_criteria=[stop], max_new_tokens=8, do_sample=False)
    surfaces["stopping: words"] = stop.words[0]
    for name, words in surfaces.items():
        assert words and all(list(w) == keys for w in words), name
    assert list(stop.stopped[0]) == [*keys, "new_tokens"] and stop.stopped[0]["flag"] is True
    spans = [(w["word"], w["start"], w["end"]) for w in surfaces["det.score"]]
    assert all([(w["word"], w["start"], w["end"]) for w in surfaces[k]] == spans for k in surfaces if ":" not in k)


LONG = "word " * (MAX_CHARS // 5 + 1)
JSON = {"Content-Type": "application/json"}
BAD_REQUESTS = {  # class: (method, path, headers, body, status)
    "malformed JSON": ("POST", "/score", JSON, b'{"text": "a', 400),
    "not UTF-8": ("POST", "/score", JSON, b'{"text": "caf\xe9"}', 400),
    "not an object": ("POST", "/score", JSON, b'["a text"]', 422),
    "text not a string": ("POST", "/score", JSON, b'{"text": 7}', 422),
    "texts not a list": ("POST", "/score", JSON, b'{"texts": "a text"}', 422),
    "a text in texts not a string": ("POST", "/score", JSON, b'{"texts": ["ok", null]}', 422),
    "neither text nor texts": ("POST", "/score", JSON, b"{}", 422),
    "both text and texts": ("POST", "/score", JSON, b'{"text": "a", "texts": ["b"]}', 422),
    "empty texts list": ("POST", "/score", JSON, b'{"texts": []}', 422),
    "empty text": ("POST", "/score", JSON, b'{"text": "   "}', 422),
    "too many texts": ("POST", "/score", JSON, json.dumps({"texts": ["a b"] * (MAX_TEXTS + 1)}).encode(), 422),
    "text too long": ("POST", "/score", JSON, json.dumps({"text": LONG}).encode(), 422),
    "body too large": ("POST", "/score", JSON, json.dumps({"text": "x" * MAX_BYTES}).encode(), 413),
    "unknown field": ("POST", "/score", JSON, b'{"text": "a b", "colour": "red"}', 422),
    "threshold out of range": ("POST", "/score", JSON, b'{"text": "a b", "threshold": 1.5}', 422),
    "threshold not a number": ("POST", "/score", JSON, b'{"text": "a b", "threshold": "high"}', 422),
    "wrong content type": ("POST", "/score", {"Content-Type": "text/plain"}, b'{"text": "a b"}', 415),
    "no content type": ("POST", "/score", {}, b'{"text": "a b"}', 415),
    "next: missing text": ("POST", "/score/next", JSON, b'{"since": 0}', 422),
    "next: negative since": ("POST", "/score/next", JSON, b'{"text": "a b", "since": -1}', 422),
    "next: since beyond the text": ("POST", "/score/next", JSON, b'{"text": "a b", "since": 4}', 422),
    "next: since not an int": ("POST", "/score/next", JSON, b'{"text": "a b", "since": "1"}', 422),
    "next: since a float": ("POST", "/score/next", JSON, b'{"text": "a b", "since": 1.5}', 422),
    "next: final not a bool": ("POST", "/score/next", JSON, b'{"text": "a b", "final": "yes"}', 422),
    "next: text too long": ("POST", "/score/next", JSON, json.dumps({"text": LONG}).encode(), 422),
    "heatmap without text": ("GET", "/heatmap", {}, b"", 422),
    "wrong method": ("GET", "/score", {}, b"", 405),
    "wrong method on next": ("PUT", "/score/next", JSON, b'{"text": "a"}', 405),
    "unknown path": ("GET", "/nowhere", {}, b"", 404),
}


def test_every_bad_request_gets_a_4xx_with_a_one_line_reason(client, capsys):
    got = {}
    for name, (method, path, headers, body, status) in BAD_REQUESTS.items():
        reply = client.request(method, path, headers=headers, content=body)
        reason = reply.json().get("error")
        got[name] = (reply.status_code, reason)
        assert reply.status_code == status, (name, reply.status_code, reply.text)
        assert isinstance(reason, str) and reason and "\n" not in reason and "Traceback" not in reason, name
    with capsys.disabled():
        print("\nbad requests:\n" + "\n".join(f"  {n}: {s} {r}" for n, (s, r) in got.items()))
    assert client.get("/healthz").json()["ready"] is True  # none of them hurt the replica


def test_the_bearer_token_is_required_everywhere_but_the_docs(url, detector):
    with httpx.Client(base_url=url, timeout=60) as anonymous:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
            for method, path, body in (("POST", "/score", {"text": "a b"}), ("GET", "/healthz", None)):
                reply = anonymous.request(method, path, headers=headers, json=body)
                assert reply.status_code == 401 and reply.headers["www-authenticate"] == "Bearer"
        assert anonymous.get("/heatmap", params={"text": "a b"}).status_code == 401
        health = anonymous.get("/healthz", headers=AUTH).json()
        assert anonymous.get("/openapi.json").json()["paths"].keys() >= {"/score", "/score/next", "/healthz"}
        assert anonymous.get("/docs").status_code == 200 and anonymous.get("/").status_code == 200
    assert health["ready"] and health["detector"] == str(detector) and health["mode"] == "online"
    assert len(health["identity"]) == 64


def test_a_script_in_the_text_stays_inert_on_the_heatmap_page(client):
    hostile = 'The <script>alert("x")</script> tag and <img src=x onerror="alert(1)"> are text here .'
    reply = client.get("/heatmap", params={"text": hostile})
    assert reply.status_code == 200 and "script-src" not in reply.headers["content-security-policy"]
    parser = _Elements()
    parser.feed(reply.text)
    assert "script" not in parser.tags and "img" not in parser.tags and not parser.handlers
    assert "alert" in "".join(parser.data) and reply.text.count('class="w') > 5


def test_concurrent_clients_get_no_errors(url, capsys):
    clients, seconds = 8, 3.0
    figures, errors, _ = running.load(url, TEXTS, clients, AUTH, seconds)
    with capsys.disabled():
        print(
            f"\nload: {clients} clients for {seconds:g} s: {figures['requests']} requests, {figures['errors']} errors, "
            f"{figures['texts_per_s']:.1f} requests/s, p50 {figures['p50_ms']:.0f} ms, p99 {figures['p99_ms']:.0f} ms"
        )
    assert errors == [] and figures["requests"] >= clients


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
