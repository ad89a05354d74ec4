"""The request side of the service: bodies read within a size limit, JSON checked against the request
models, the bearer token compared in constant time, and every client mistake turned into a 4xx with a
one-line ``{"error": ...}`` (never a 500 or a traceback).

Bodies are parsed here rather than by FastAPI, so each class of bad request gets its own status:
413 too large, 415 not JSON, 400 not UTF-8 or malformed JSON, 422 valid JSON of the wrong shape.
"""

from __future__ import annotations

import hmac
import json

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from hades_ray.score.word_record import WordRecord
from hades_ray.serve.scoring import RequestError

LANGUAGE_HELP = "the texts' Wiki-40B language (en, de, zh-cn, ...); default: the served detector's"


class ScoreRequest(BaseModel):
    """``POST /score``: one text or a list of them; ``threshold`` overrides the detector's for flags."""

    model_config = ConfigDict(extra="forbid", strict=True)
    text: str | None = Field(None, description="one text")
    texts: list[str] | None = Field(None, description="several texts (at most serve.max_texts_per_request)")
    threshold: float | None = Field(None, ge=0.0, le=1.0, description="flag p(H) at or above it")
    language: str | None = Field(None, description=LANGUAGE_HELP)

    @model_validator(mode="after")
    def _one_of_text_or_texts(self) -> ScoreRequest:
        if (self.text is None) == (self.texts is None):
            raise ValueError('give "text" or "texts", one of the two')
        if self.texts is not None and not self.texts:
            raise ValueError('"texts" is an empty list')
        return self

    def all_texts(self) -> list[str]:
        return [self.text] if self.text is not None else list(self.texts)


class NextRequest(BaseModel):
    """``POST /score/next``: the text generated so far, and where the last call's words ended."""

    model_config = ConfigDict(extra="forbid", strict=True)
    text: str = Field(description="the whole text so far")
    since: int = Field(0, ge=0, description="the 'next' of the previous call (0 at first)")
    final: bool = Field(False, description="the text is finished: its last word is complete too")
    language: str | None = Field(None, description=LANGUAGE_HELP)


class NextResponse(BaseModel):
    words: list[WordRecord]
    next: int


def one_line(error: ValidationError) -> str:
    """The first problem of a validation error as ``field: message``."""
    first = error.errors()[0]
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"]).lstrip(".")
    message = first["msg"].removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def parse_json(body: bytes, content_type: str | None, model: type[BaseModel]):
    """``body`` as ``model``, or a ``RequestError`` naming what is wrong with it."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media != "application/json":
        raise RequestError(415, f"send Content-Type: application/json (got {media or 'none'!r})")
    try:
        data = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise RequestError(400, f"the body is not UTF-8 (byte {error.start})") from None
    except json.JSONDecodeError as error:
        raise RequestError(400, f"malformed JSON: {error.msg} at line {error.lineno} column {error.colno}") from None
    if not isinstance(data, dict):
        raise RequestError(422, "the body must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise RequestError(422, one_line(error)) from None


async def read_body(request, limit: int) -> bytes:
    """The body, refused with 413 once it passes ``limit`` bytes (declared or streamed)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise RequestError(413, f"the body is over {limit} bytes (serve.max_request_bytes)")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestError(413, f"the body is over {limit} bytes (serve.max_request_bytes)")
        chunks.append(chunk)
    return b"".join(chunks)


def check_token(expected: str, authorization: str | None) -> None:
    """Refuse (401) a request without ``Authorization: Bearer <expected>``; no token set: all pass."""
    if not expected:
        return
    scheme, _, given = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), expected.encode()):
        raise RequestError(401, "missing or wrong bearer token (send Authorization: Bearer <token>)")
