"""The service's two HTML pages: a form, and a text's heatmap drawn by ``hades_ray/score/html.py`` (every
piece of text escaped there; the same Content-Security-Policy, sent as a header too, forbids scripts)."""

from __future__ import annotations

from fastapi.responses import HTMLResponse

from hades_ray.score.html import CSP, STYLE, render
from hades_ray.score.writer import text_record
from hades_ray.text.languages import language_of

HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff"}
FORM = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>hades-ray detector</title>'
    f"<style>{STYLE}</style></head><body><h1>p(H) per word</h1>"
    '<form method="get" action="heatmap"><textarea name="text" rows="8" cols="80" dir="auto" required></textarea>'
    '<p><label>language <input name="language" size="6" placeholder="default"></label> '
    '<button type="submit">Show the heatmap</button></p></form>'
    '<p class="meta">JSON API: <a href="docs">docs</a>.</p></body></html>\n'
)


def form_page() -> HTMLResponse:
    return HTMLResponse(FORM, headers=HEADERS)


def heatmap_page(row: dict, threshold: float) -> HTMLResponse:
    """The page ``hades-ray score --html`` draws, for one scored text."""
    record = text_record(row, threshold, language_of(row))  # a request's row names its language
    return HTMLResponse(render([record], "p(H) per word", threshold), headers=HEADERS)
