"""A judge served over HTTP: ``hades-ray serve``'s ``POST /score/next`` scores each chunk, so the guard
runs beside a detector that another process (or machine) keeps loaded.

The contract: the request is ``{"text": <prompt and text so far>, "since": <where the chunk starts>,
"final": true}`` (the chunk's last word is complete: the token after it starts a new word), and the
answer ``{"words": [{"word", "start", "end", "p", "flag"}], "next"}`` lists the target words from
``since`` on, with characters in ``text`` (a server from before issue 46 spells p(H) ``p_hallucination``:
``read_word`` takes either). The server holds no state per caller, so a
resampled word is simply asked about again with the same ``since``. The rows waiting in one step are
sent at once (one thread each), so the service batches them (``@serve.batch``). Which words are
targets is the server's ``score.words`` setting; the guard flags with its own threshold (by default
the served detector's, from ``GET /healthz``). ``HADES_SERVE_TOKEN`` holds the bearer token, if any.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from http.client import HTTPConnection, HTTPException, HTTPSConnection

from hades_ray.errors import UserError
from hades_ray.detect.judged_words import word_start
from hades_ray.score.word_record import read_word
from hades_ray.text.languages import language_of

TOKEN_ENV = "HADES_SERVE_TOKEN"
TIMEOUT_S = 60.0
MAX_PARALLEL = 16


def is_url(guard: str | None) -> bool:
    return bool(guard) and guard.startswith(("http://", "https://"))


class HttpJudge:
    """The guard's judge protocol (``begin``, ``score_chunks``, ``threshold``) over a served detector."""

    def __init__(self, url: str, threshold: float | None = None, token: str | None = None):
        parts = urllib.parse.urlsplit(url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UserError(f"--guard {url}: give http://HOST:PORT of a `hades-ray serve` detector")
        self.url, self.parts = url.rstrip("/"), parts
        self.token = os.environ.get(TOKEN_ENV, "") if token is None else token
        self._local = threading.local()
        self.health = self.call("GET", "/healthz")
        if self.health.get("mode") != "online":
            raise UserError(f"{self.url} serves a {self.health.get('mode')} detector; the guard needs an online one")
        self.threshold = float(self.health["threshold"] if threshold is None else threshold)
        self.words = self.health.get("words")
        self.language = language_of(self.health)  # the service cuts words in its own language

    def begin(self, rows: int) -> None:
        """Nothing to reset: the server keeps no state per caller."""

    def score_chunks(self, requests: list[tuple[int, str, str]]) -> list[list[dict]]:
        """For each ``(row, prefix, chunk)``: the chunk's target words with p(H) (characters in the chunk)."""
        if not requests:
            return []
        workers = min(len(requests), MAX_PARALLEL)
        if workers == 1:
            return [self._chunk(prefix, chunk) for _, prefix, chunk in requests]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(lambda r: self._chunk(r[1], r[2]), requests))

    def _chunk(self, prefix: str, chunk: str) -> list[dict]:
        shift = len(prefix)
        since = word_start(prefix + chunk, shift, self.language)  # a chunk continuing the prompt's last word
        answer = self.call("POST", "/score/next", {"text": prefix + chunk, "since": since, "final": True})
        return [
            {
                "start": max(w["start"] - shift, 0),
                "end": w["end"] - shift,
                "word": chunk[max(w["start"] - shift, 0) : w["end"] - shift],
            }
            | {"p": float(w["p"])}
            for w in map(read_word, answer["words"])
            if w["end"] > shift
        ]

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        """One request on this thread's kept-alive connection; any failure is a one-line ``UserError``."""
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        for attempt in (0, 1):  # a kept-alive connection the server closed is reopened once
            try:
                connection = self._connection(fresh=attempt > 0)
                connection.request(method, self.parts.path + path, body=data, headers=headers)
                response = connection.getresponse()
                payload = response.read()
                break
            except (OSError, HTTPException) as error:
                if attempt:
                    raise UserError(f"--guard {self.url}: cannot reach the served detector ({error})") from None
        return _answer(self.url + path, response.status, payload)

    def _connection(self, fresh: bool):
        if fresh or getattr(self._local, "connection", None) is None:
            kind = HTTPSConnection if self.parts.scheme == "https" else HTTPConnection
            self._local.connection = kind(self.parts.hostname, self.parts.port, timeout=TIMEOUT_S)
        return self._local.connection


def _answer(where: str, status: int, payload: bytes) -> dict:
    try:
        data = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        data = None
    if status == 401:
        raise UserError(f"{where}: the server wants a bearer token: set {TOKEN_ENV} to it")
    if status != 200 or not isinstance(data, dict):
        reason = data.get("error") if isinstance(data, dict) else payload[:200].decode("utf-8", "replace")
        raise UserError(f"{where}: HTTP {status}: {reason}")
    return data
