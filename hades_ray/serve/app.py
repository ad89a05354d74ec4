"""The Serve application: one FastAPI ingress deployment holding the detector, requests from all
callers scored together (``@serve.batch``), replicas scaled between the ``serve`` section's bounds.

``build_app`` is the application builder ``serve run``/``serve deploy`` call
(``import_path: hades_ray.serve.app:build_app``, see ``cluster/serve.yaml``); ``hades-ray serve`` binds
the same application with ``service_app``.

No ``from __future__ import annotations`` here: Serve rebuilds the routes' signatures, and FastAPI then
must see ``Request`` as a class, not as a string.
"""

import asyncio
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from ray import serve
from starlette.exceptions import HTTPException

from hades_ray.serve.pages import form_page, heatmap_page
from hades_ray.serve.requests import (
    NextRequest,
    NextResponse,
    ScoreRequest,
    check_token,
    parse_json,
    read_body,
)
from hades_ray.serve.scoring import RequestError, ServiceScorer, records_body

api = FastAPI(title="hades-ray detector", description="p(H) per word of a text, from a trained HaDes detector")


def _error(status: int, reason: str, headers: dict | None = None) -> JSONResponse:
    if status == 401:
        headers = {"WWW-Authenticate": "Bearer"}
    return JSONResponse({"error": reason}, status_code=status, headers=headers)


@api.exception_handler(RequestError)
async def _request_error(request: Request, error: RequestError) -> JSONResponse:
    return _error(error.status, error.reason)


@api.exception_handler(HTTPException)
async def _http_error(request: Request, error: HTTPException) -> JSONResponse:
    reason = {404: f"no route {request.url.path}", 405: f"{request.method} is not allowed on {request.url.path}"}
    return _error(error.status_code, reason.get(error.status_code, str(error.detail)), error.headers)


@api.exception_handler(RequestValidationError)
async def _validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
    problem = error.errors()[0]
    where = ".".join(str(p) for p in problem["loc"][1:]) or "request"
    return _error(422, f"{where}: {problem['msg']}")


@api.exception_handler(Exception)
async def _server_error(request: Request, error: Exception) -> JSONResponse:
    return _error(500, f"internal error ({type(error).__name__}); the server log has the details")


def _schema(model) -> dict:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": model.model_json_schema()}}}}


@serve.deployment
@serve.ingress(api)
class DetectorService:
    """A replica: the detector loaded once; requests parsed, checked and batched here."""

    def __init__(self, model: str, config, token: str = ""):
        s = config.serve
        self.scorer = ServiceScorer(model, config, s.num_gpus)
        self.token, self.limit, self.max_texts = token, s.max_request_bytes, s.max_texts_per_request
        self._score_batch.set_max_batch_size(s.max_batch_size)
        self._score_batch.set_batch_wait_timeout_s(s.batch_wait_timeout_s)

    @serve.batch(max_batch_size=16, batch_wait_timeout_s=0.005)
    async def _score_batch(self, tables: list) -> list[list[dict]]:
        # The forward runs off the event loop, so health checks and new requests are answered meanwhile.
        return await asyncio.to_thread(self.scorer.score_tables, tables)

    async def _body(self, request: Request, model):
        check_token(self.token, request.headers.get("authorization"))
        return parse_json(await read_body(request, self.limit), request.headers.get("content-type"), model)

    @api.post("/score", openapi_extra=_schema(ScoreRequest), summary="p(H) of every target word of texts")
    async def score(self, request: Request) -> Response:
        body = await self._body(request, ScoreRequest)
        texts = body.all_texts()
        if len(texts) > self.max_texts:
            raise RequestError(422, f"texts: {len(texts)} texts, at most {self.max_texts} per request")
        rows = await self._score_batch(self.scorer.table(texts, body.language))
        threshold = body.threshold if body.threshold is not None else self.scorer.threshold
        return Response(records_body(rows, threshold), media_type="application/json")

    @api.post("/score/next", openapi_extra=_schema(NextRequest), response_model=NextResponse)
    async def score_next(self, request: Request) -> Response:
        """The words completed since ``since`` in the text so far (what a streaming generator calls)."""
        body = await self._body(request, NextRequest)
        if self.scorer.mode != "online":
            raise RequestError(409, "this detector scores offline (it reads right context): /score/next needs online")
        if body.since > len(body.text):
            raise RequestError(422, f"since: {body.since} is beyond the text's {len(body.text)} characters")
        if not body.text.strip():
            return JSONResponse({"words": [], "next": body.since})
        self.scorer.table([body.text], body.language)  # what /score refuses, refused alike
        stream = self.scorer.text_stream(self.scorer.threshold, body.since, body.language)
        # Only the words after ``since`` are cut and scored (their views, or the window holding them).
        words = await asyncio.to_thread(stream.feed, body.text, body.final)
        return JSONResponse({"words": words, "next": stream.since})

    @api.get("/healthz", summary="the detector served, and whether it is ready")
    async def healthz(self, request: Request) -> dict:
        check_token(self.token, request.headers.get("authorization"))
        s = self.scorer
        return {
            "ready": True,
            **s.describe(),
            "words": s.words,
            "threshold": s.threshold,
            "max_chars": s.max_chars,
            "language": s.language.name,
        }

    @api.get("/", response_class=HTMLResponse, summary="a form for the heatmap page")
    async def form(self) -> HTMLResponse:
        return form_page()

    @api.get("/heatmap", response_class=HTMLResponse, summary="a text's words shaded by p(H)")
    async def heatmap(self, request: Request, text: str, language: str | None = None) -> HTMLResponse:
        check_token(self.token, request.headers.get("authorization"))
        (row,) = await self._score_batch(self.scorer.table([text], language or None))  # the form's empty field
        return heatmap_page(row, self.scorer.threshold)


def service_app(model: str, config, token: str | None = None):
    """The application for detector folder ``model`` under ``config`` (its ``serve`` section sizes it)."""
    s = config.serve
    options = {
        "autoscaling_config": {
            "min_replicas": s.min_replicas,
            "initial_replicas": max(1, s.min_replicas),
            "max_replicas": s.max_replicas,
            "target_ongoing_requests": s.target_ongoing_requests,
        },
        "max_ongoing_requests": s.max_ongoing_requests,
        "ray_actor_options": {"num_cpus": s.num_cpus, "num_gpus": s.num_gpus},
    }
    folder = str(Path(model).resolve())  # replicas need not share the caller's working directory
    return DetectorService.options(**options).bind(folder, config, s.bearer_token() if token is None else token)


def build_app(args: dict):
    """``serve run``/``serve deploy``'s builder: ``args`` are ``model`` (a detector folder) and optionally
    ``config`` (a YAML file), ``preset`` and ``set`` (a list of ``key=value`` overrides, as ``--set``)."""
    from hades_ray.config import load_config
    from hades_ray.detect.detector import Detector

    config = load_config(args.get("preset"), args.get("config"), list(args.get("set", [])))
    Detector.open(args["model"]).scoring_mode(config.score.mode)  # a bad folder fails the deploy, not a replica
    return service_app(args["model"], config)
