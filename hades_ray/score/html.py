"""The heatmap page of ``hades-ray score`` and ``hades-ray generate``: each text with its scored words
shaded by p(H) (the paper's Fig. 5 idea), the value on hover, a legend, and the most suspicious words.

One self-contained file: inline CSS, no script, no external resource. Every piece of corpus text goes
through ``html.escape``, and a Content-Security-Policy forbids scripts anyway, so a ``<script>`` in a
text shows as text. A text not in English (a record's ``language``) is marked with its ``lang`` (fonts:
Chinese and Japanese glyphs differ), and Arabic, Persian and Hebrew are laid out right to left.
"""

from __future__ import annotations

import heapq
from html import escape
from pathlib import Path

from hades_ray.pipeline import storage
from hades_ray.score.word_record import read_word
from hades_ray.text.languages import language_of

TOP_WORDS = 30
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
STYLE = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:60em;color:#1f2328;line-height:1.6}
h1{font-size:1.4em}h2{font-size:1.05em;margin:1.4em 0 .3em;color:#57606a}
.text{white-space:pre-wrap;margin:0}.prompt{color:#6e7781}
.w{border-radius:3px;padding:0 1px}.flag{outline:2px solid #cf222e}
.legend{display:flex;align-items:center;gap:.6em;margin:1em 0}
.bar{width:16em;height:1em;background:linear-gradient(90deg,rgba(207,34,46,0),rgba(207,34,46,.85))}
table{border-collapse:collapse;margin:1em 0}td,th{padding:.2em .7em;border-bottom:1px solid #d0d7de;text-align:left}
.num{text-align:right;font-variant-numeric:tabular-nums}.meta{color:#57606a;font-size:.9em}
"""


def text_attributes(fields: dict) -> str:
    """The ``lang`` (and, right-to-left, ``dir``) attributes of an element holding the text of a record (a
    scored text, a word, an example) in the language it names (``language_of``); none for English, so
    English pages keep their bytes."""
    lang = language_of(fields)
    if lang.is_default:
        return ""
    direction = ' dir="rtl"' if lang.rtl else ""
    return f'{direction} lang="{escape(lang.name)}"'


def _shade(p: float) -> str:
    return f"background:rgba(207,34,46,{0.85 * min(max(p, 0.0), 1.0):.3f})"


def marked_text(text: str, words: list[dict]) -> str:
    """``text`` escaped, each scored word wrapped in a shaded span titled with its p(H) (words in either
    spelling: ``read_word``)."""
    pieces, cursor = [], 0
    for w in sorted(map(read_word, words), key=lambda w: w["start"]):
        if w["start"] < cursor:
            continue  # overlapping spans cannot be nested in one line of text; the first wins
        pieces.append(escape(text[cursor : w["start"]]))
        css = "w flag" if w.get("flag") else "w"
        title = f"p(H) = {w['p']:.3f}" + (" (flagged)" if w.get("flag") else "")
        pieces.append(
            f'<span class="{css}" style="{_shade(w["p"])}" title="{escape(title)}">'
            f"{escape(text[w['start'] : w['end']])}</span>"
        )
        cursor = w["end"]
    pieces.append(escape(text[cursor:]))
    return "".join(pieces)


def most_suspicious(records, top: int = TOP_WORDS) -> list[dict]:
    """The ``top`` highest-p(H) words over ``records`` (any iterable: kept in bounded memory)."""
    heap: list[tuple] = []
    for n, record in enumerate(records):
        for k, w in enumerate(map(read_word, record.get("words", []))):
            shown = {"id": record["id"], **w, "context": _context(record["text"], w)}
            if record.get("language"):
                shown["language"] = record["language"]
            item = (w["p"], -n, -k, shown)
            if len(heap) < top:
                heapq.heappush(heap, item)
            elif item[:3] > heap[0][:3]:
                heapq.heapreplace(heap, item)
    return [item[3] for item in sorted(heap, key=lambda i: i[:3], reverse=True)]


def _context(text: str, word: dict, width: int = 40) -> str:
    lo, hi = max(0, word["start"] - width), min(len(text), word["end"] + width)
    return ("…" if lo else "") + text[lo:hi].replace("\n", " ") + ("…" if hi < len(text) else "")


def _record_html(record: dict) -> str:
    attrs = text_attributes(record)
    parts = [f"<section><h2>{escape(str(record['id']))}</h2>"]
    if record.get("prompt"):
        parts.append(f'<p class="text prompt"{attrs}>{escape(record["prompt"])}</p>')
    parts.append(f'<p class="text"{attrs}>{marked_text(record["text"], record.get("words", []))}</p>')
    interventions = record.get("interventions") or []
    if interventions:
        rows = "".join(
            f"<tr><td{attrs}>{escape(str(i.get('rejected', '')))}</td>"
            f"<td class=num>{i.get('p_rejected', 0):.3f}</td>"
            f"<td{attrs}>{escape(str(i.get('replacement', '')))}</td></tr>"
            for i in interventions
        )
        parts.append(f"<table><tr><th>rejected</th><th>p(H)</th><th>kept instead</th></tr>{rows}</table>")
    parts.append("</section>")
    return "".join(parts)


def _attrs(word: dict) -> str:
    return text_attributes(word)


def _suspicious_html(words: list[dict]) -> str:
    rows = "".join(
        f"<tr><td>{escape(str(w['id']))}</td><td{_attrs(w)}><b>{escape(w.get('word', ''))}</b></td>"
        f"<td class=num>{w['p']:.3f}</td><td class=meta{_attrs(w)}>{escape(w['context'])}</td></tr>"
        for w in words
    )
    return f"<table><tr><th>text</th><th>word</th><th>p(H)</th><th>context</th></tr>{rows}</table>"


def render(records: list[dict], title: str, threshold: float, suspicious=None, total: int | None = None) -> str:
    suspicious = most_suspicious(records) if suspicious is None else suspicious
    shown = f"{len(records)} texts"
    if total is not None and total > len(records):
        shown = f"{len(records)} of {total} texts"
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}"><title>{escape(title)}</title>'
        f"<style>{STYLE}</style></head><body><h1>{escape(title)}</h1>"
        f'<p class="meta">{escape(shown)}; words shaded by p(H), flagged (outlined) at p(H) &ge; {threshold:.3f};'
        " hover a word for its value.</p>"
        '<div class="legend"><span>0</span><div class="bar"></div><span>1</span></div>'
        f"<h2>Most suspicious words</h2>{_suspicious_html(suspicious)}"
        f"{''.join(_record_html(r) for r in records)}</body></html>\n"
    )


def write_report(
    records: list[dict], path, title: str = "p(H) per word", suspicious=None, total: int | None = None
) -> Path:
    """Write the page for ``records`` (each ``{"id", "text", "words": [{"word", "start", "end", "p",
    "flag"}], "threshold"}``, optionally ``prompt`` and ``interventions``); returns its path."""
    threshold = float(records[0].get("threshold", 0.5)) if records else 0.5
    storage.write(str(path), render(records, title, threshold, suspicious, total))
    return Path(path)
