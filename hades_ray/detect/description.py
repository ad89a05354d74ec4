"""``detector.json``, a detector folder's description: read and checked here, and written here only.

Its writers are train's export of the span classifier (``hades_ray/detect/model.py``), train's LR/SVM
detectors and the validation threshold added to either (``hades_ray/detect/detector.py``). A missing or
broken description is a one-line error naming the file, before any model loads.
"""

from __future__ import annotations

import json
from pathlib import Path

from hades_ray.detect.settings import DETECTORS, TOKENS, WINDOW_UNITS
from hades_ray.pipeline import storage

DETECTOR_JSON = "detector.json"
SPAN_FORMAT = "hades_ray.span_classifier/1"
SPAN_FIELDS = ("backbone", "mode", "window", "pooling", "mlp_layers", "freeze")


def read_description(folder: str | Path) -> dict:
    """``folder/detector.json``; a missing, unreadable or foreign one is a one-line error naming it."""
    from hades_ray.models.registry import CheckpointError, ModelNotFoundError

    path = Path(folder) / DETECTOR_JSON
    if not path.is_file():
        raise ModelNotFoundError(f"{folder} is not a detector folder (no {DETECTOR_JSON}); train one first")
    try:
        meta = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise CheckpointError(f"{path}: not a valid detector description ({error})") from None
    problem = _description_problem(meta)
    if problem:
        raise CheckpointError(f"{path}: {problem}")
    return meta


def write_description(folder: str | Path, meta: dict) -> None:
    """Write a detector's ``detector.json`` atomically."""
    storage.write(Path(folder) / DETECTOR_JSON, json.dumps(meta, indent=2) + "\n")


def _description_problem(meta) -> str:
    """What is wrong with a parsed ``detector.json`` ("" when nothing is)."""
    if not isinstance(meta, dict):
        return "not a valid detector description (not a JSON object)"
    if meta.get("type") not in DETECTORS:
        return f"field 'type': expected one of {', '.join(DETECTORS)}"
    if meta["type"] != "transformer":
        return ""
    if meta.get("format") != SPAN_FORMAT:
        return f"field 'format': expected {SPAN_FORMAT!r}"
    missing = [k for k in SPAN_FIELDS if k not in meta]
    if missing:
        return f"missing field(s) {', '.join(missing)}"
    if meta.get("window_unit", TOKENS) not in WINDOW_UNITS:  # optional: absent means tokens
        return f"field 'window_unit': expected one of {', '.join(WINDOW_UNITS)}"
    return ""
