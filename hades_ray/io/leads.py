"""Lead paragraphs in JSONL (one ``{"id", "text", ...}`` record a line, as the shared enwiki sample): the
first texts of a file, and a corpus of any size made by repeating one with new ids (scale runs)."""

from __future__ import annotations

import json
from pathlib import Path


def lead_texts(path: str | Path, n: int) -> list[str]:
    """The ``text`` of the first ``n`` records of ``path`` (fewer where the file is shorter)."""
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line)["text"] for _, line in zip(range(n), handle)]


def repeated_leads(source: str | Path, docs: int, path: str | Path) -> Path:
    """``docs`` records at ``path``: ``source``'s repeated, copy ``c`` of record ``id`` named ``rc-id``."""
    from hades_ray.pipeline import storage

    lines = Path(source).read_text(encoding="utf-8").splitlines()
    with storage.open_atomic(path, "w") as out:
        for i in range(docs):
            record = json.loads(lines[i % len(lines)])
            out.write(json.dumps(record | {"id": f"r{i // len(lines)}-{record['id']}"}) + "\n")
    return Path(path)
