"""Prompts files: planning shards over JSONL lines and reading one shard on a worker.

Each line is ``{"prompt": "...", "id": "..."}`` (``id`` optional: ``FILE:LINE`` stands in). Every
line of a shard comes out exactly once, as a prompt or with a ``reject`` reason for the quarantine
file (invalid UTF-8 or JSON, not an object, no prompt, a prompt that is no string, empty, or longer
than ``MAX_PROMPT_CHARS``), so nothing is dropped silently. Line numbers in quarantine entries are exact.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.fs as pafs

from hades_ray.io.readers import InputError, decode_json_line, plan_shards, shard_lines
from hades_ray.pipeline import storage
from hades_ray.pipeline.shards import Shard

MAX_PROMPT_CHARS = 20_000  # far past any model's context; a longer one is quarantined, never truncated
PROMPT_SCHEMA = pa.schema({"row": pa.int64()} | dict.fromkeys(["id", "prompt", "source", "reject"], pa.string()))


def plan_prompt_shards(path: str, shard_size: int, mapper=None) -> list[Shard]:
    """Row-range shards of ``shard_size`` lines over one JSONL prompts file (indexed once), planned as the
    perturbation input is (``hades_ray/io/readers.py``)."""
    try:
        info = storage.file_info(path)
    except OSError as error:
        raise InputError(f"prompts {path}: cannot be read ({error})") from None
    if info.type != pafs.FileType.File:
        raise InputError(f'prompts file not found: {path} (give a JSONL file with one {{"prompt": ...}} per line)')
    return plan_shards(str(path), shard_size, mapper=mapper)


def prompt_row(raw: bytes | None, row: int, source: str, fallback: str) -> dict:
    """One line as a prompt row, or the reason it is set aside (``source`` is ``file:line``)."""
    record, reject = decode_json_line(raw)
    if reject or not isinstance(record, dict):
        return _row(row, source, fallback) | {"reject": reject or "not_an_object"}
    given = record.get("id")
    if isinstance(given, (str, int)) and not isinstance(given, bool) and str(given) != "":
        fallback = str(given)
    return given_prompt_row(record.get("prompt"), row, source, fallback)


def given_prompt_row(prompt: object, row: int, source: str, text_id: str) -> dict:
    """A prompt (from a line, or handed to ``hades_ray.guarded_generate``) as a row, checked the same way."""
    out = _row(row, source, text_id)
    if prompt is None:
        return out | {"reject": "missing_prompt"}
    if not isinstance(prompt, str):
        return out | {"reject": "prompt_not_a_string"}
    if not prompt.strip():
        return out | {"reject": "empty_prompt"}
    if len(prompt) > MAX_PROMPT_CHARS:
        return out | {"reject": "prompt_too_long"}
    return out | {"prompt": prompt}


def _row(row: int, source: str, text_id: str) -> dict:
    return {"row": row, "id": text_id, "prompt": "", "source": source, "reject": ""}


def read_prompt_shard(shard: Shard) -> pa.Table:
    """The shard's lines as rows (blank lines skipped), sorted by prompt length so batches pad little."""
    return prompt_table([prompt_row(raw, row, source, fallback) for row, raw, source, fallback in shard_lines(shard)])


def prompt_table(rows: list[dict]) -> pa.Table:
    """One shard's prompt rows as the generation stage reads them: sorted by prompt length (then row)."""
    rows = sorted(rows, key=lambda r: (len(r["prompt"]), r["row"]))
    return pa.Table.from_pylist(rows, schema=PROMPT_SCHEMA)
