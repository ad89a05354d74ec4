"""``hades-ray serve``: a trained detector as a Ray Serve HTTP service (issue 18, item 1).

The HTTP contract (``hades_ray/serve/app.py``; OpenAPI at ``/docs`` and ``/openapi.json``):

- ``POST /score`` ``{"text": str}`` or ``{"texts": [str, ...]}``, optionally ``"threshold"`` and
  ``"language"`` (a Wiki-40B name; default: the config's ``language``, or the detector's):
  ``{"results": [record, ...]}``, each record byte for byte the line ``hades-ray score`` writes to
  ``scores.jsonl`` for that text (``{"id": "text:N", "source", "text", "threshold", "words": [{"word",
  "start", "end", "p", "flag"}], "n_words", "n_flagged", "max_p"}``, and ``language`` after ``source`` when
  it is not English), N the text's place in the request. Offsets count characters (code points) in every script.
- ``POST /score/next`` ``{"text": "<the text so far>", "since": 0, "final": false}`` (and ``language``):
  ``{"words": [{"word", "start", "end", "p", "flag"}, ...], "next": int}`` (the word records of ``/score``;
  ``hades_ray/score/word_record.py``): every target word that starts at or after ``since`` and is
  complete (followed by a boundary; every word when ``final``), and the offset to pass as ``since`` next
  time. Calling it as text streams in and concatenating the words gives the words of one ``final`` call
  (online scoring sees no right context).
- ``GET /healthz``: the detector's identity, mode, threshold, language and ``ready``.
- ``GET /`` a form, ``GET /heatmap?text=...`` (``&language=``): the text's heatmap page (``hades_ray/score/html.py``).

A bad request is a 4xx with ``{"error": "<one line>"}``; with a token set, every route but ``/``,
``/docs`` and ``/openapi.json`` needs ``Authorization: Bearer <token>``.

Must not import: api, plan, report, reproduce, nor any cli.py (the floors above its own, hades_ray/floors.py).
"""
