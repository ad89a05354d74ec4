"""``hades-ray serve``'s application on loopback for the tests and the benchmark that call it over HTTP:
started on a free port, and loaded by concurrent clients. ``TOKEN`` and ``SETTINGS`` are the app the
package's HTTP tests share (tests/serve/conftest.py)."""

from __future__ import annotations

import queue
import statistics
import threading
import time
from contextlib import contextmanager

import httpx

from tests.loopback import free_port

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
MAX_CHARS, MAX_TEXTS, MAX_BYTES = 400, 4, 4096
# Blank spaCy pipelines for the other languages (English keeps its own): the language tests share the app.
SETTINGS = [f"score.max_chars={MAX_CHARS}", "score.words=all", "serve.num_cpus=0.5"]
SETTINGS += ["spacy_model=blank", "languages.en.spacy_model=auto"]
SETTINGS += [f"serve.max_texts_per_request={MAX_TEXTS}", f"serve.max_request_bytes={MAX_BYTES}"]


@contextmanager
def served(detector, settings: list[str], token: str, name: str):
    """The application for ``detector`` (config overrides ``settings``, bearer ``token``) on a free loopback
    port until the block ends; yields its base URL once the HTTP proxy answers. Needs Ray running."""
    from ray import serve

    from hades_ray.config import load_config
    from hades_ray.serve.app import service_app

    port = free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        serve.run(service_app(str(detector), load_config(None, None, settings), token=token), name=name)
        url = f"http://127.0.0.1:{port}"
        _wait_for_proxy(url)
        yield url
    finally:
        serve.shutdown()


def _wait_for_proxy(url: str) -> None:
    """``serve.run`` returns once the replica is up; the HTTP proxy may still be binding its port."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(url + "/openapi.json", timeout=5)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise AssertionError(f"nothing answers at {url}")


def load(url: str, texts: list[str], clients: int, headers: dict | None = None, seconds: float | None = None):
    """``clients`` callers, each posting one text per ``POST /score``: every text once, from a shared queue,
    or with ``seconds``, the texts over and over until that time is up. Returns the figures (requests,
    errors, seconds, texts_per_s, p50_ms, p99_ms), the errors (``status body``) and each text's p(H)
    by its index (the last answer where a text went more than once)."""
    todo: queue.Queue = queue.Queue()
    for k, text in enumerate(texts):
        todo.put((k, text))
    latencies, errors, answers = [], [], {}
    began = time.perf_counter()

    def caller() -> None:
        with httpx.Client(base_url=url, headers=headers, timeout=600) as c:
            while seconds is None or time.perf_counter() - began < seconds:
                try:
                    k, text = todo.get_nowait()
                except queue.Empty:
                    return
                if seconds is not None:
                    todo.put((k, text))  # back in line: the texts go round until the time is up
                started = time.perf_counter()
                reply = c.post("/score", json={"text": text})
                latencies.append(time.perf_counter() - started)
                if reply.status_code == 200:
                    answers[k] = [w["p"] for w in reply.json()["results"][0]["words"]]
                else:
                    errors.append(f"{reply.status_code} {reply.text}")

    threads = [threading.Thread(target=caller) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - began
    cuts = statistics.quantiles(latencies, n=100)
    figures = {"clients": clients, "requests": len(latencies), "errors": len(errors), "seconds": round(wall, 2)}
    figures |= {"texts_per_s": round(len(latencies) / wall, 2), "p50_ms": round(cuts[49] * 1000, 1)}
    figures |= {"p99_ms": round(cuts[98] * 1000, 1)}
    return figures, errors, answers
