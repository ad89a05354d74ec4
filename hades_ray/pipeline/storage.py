"""Paths as URIs resolved through ``pyarrow.fs``: a local path, ``file://``, ``s3://`` or ``gs://``.

S3 access follows the standard AWS variables (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``), so any S3-compatible store works. Writes are
atomic: locally a uniquely named temp file is fsynced and renamed into place; on an object store a
single PUT is already all-or-nothing, so the object is written under its final key.
"""

from __future__ import annotations

import io
import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

_CHUNK = 8 * 1024 * 1024


def is_uri(path: str | Path) -> bool:
    return "://" in str(path)


def is_local(path: str | Path) -> bool:
    return not is_uri(path) or str(path).startswith("file://")


def _s3(uri: str) -> tuple[pafs.FileSystem, str]:
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    options: dict = {"region": os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION") or "us-east-1"}
    if endpoint:
        scheme, _, host = endpoint.partition("://")
        options.update(endpoint_override=host or scheme, scheme=scheme if host else "https")
    return pafs.S3FileSystem(**options), uri.split("://", 1)[1].rstrip("/")


def resolve(path: str | Path) -> tuple[pafs.FileSystem, str]:
    """(filesystem, path inside it) for a local path or URI."""
    text = str(path)
    if text.startswith("s3://"):
        return _s3(text)
    if not is_uri(text):
        return pafs.LocalFileSystem(), str(Path(text).expanduser().absolute())
    return pafs.FileSystem.from_uri(text)


def join(base: str | Path, *parts: str) -> str:
    return "/".join([str(base).rstrip("/"), *parts])


def exists(path: str | Path) -> bool:
    fs, inner = resolve(path)
    return fs.get_file_info(inner).type != pafs.FileType.NotFound


def file_info(path: str | Path) -> pafs.FileInfo:
    fs, inner = resolve(path)
    return fs.get_file_info(inner)


def makedirs(path: str | Path) -> None:
    fs, inner = resolve(path)
    fs.create_dir(inner, recursive=True)


def read_bytes(path: str | Path) -> bytes:
    fs, inner = resolve(path)
    with fs.open_input_stream(inner) as handle:
        return handle.read()


def read_text(path: str | Path) -> str:
    return read_bytes(path).decode("utf-8")


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` so that readers see either nothing or all of it."""
    fs, inner = resolve(path)
    if isinstance(fs, pafs.LocalFileSystem):
        _write_local(Path(inner), data)
        return
    with fs.open_output_stream(inner) as handle:
        handle.write(data)


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def _write_local(path: Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


@contextmanager
def atomic_path(path: str | Path, replace: bool = True) -> Iterator[Path]:
    """A temporary local path beside ``path`` for the ``with`` block to write (streamed, or by a library
    such as ``to_parquet`` or ``save_file``); on success it is fsynced and put in place, so readers see
    either the old file or all of the new one. ``replace=False`` never overwrites: an existing ``path``
    raises ``FileExistsError``. On any error the temporary file is removed and ``path`` is untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")  # unique per writer: no two runs share one
    try:
        yield tmp
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # fails rather than overwrite
    finally:
        tmp.unlink(missing_ok=True)


def delete(path: str | Path) -> None:
    fs, inner = resolve(path)
    if fs.get_file_info(inner).type == pafs.FileType.File:
        fs.delete_file(inner)


def list_files(path: str | Path, suffixes: tuple[str, ...] = (), recursive: bool = True) -> list[str]:
    """Files under a folder (sorted URIs or paths, in the same form as ``path``); hidden names skipped."""
    fs, inner = resolve(path)
    infos = fs.get_file_info(pafs.FileSelector(inner, recursive=recursive, allow_not_found=True))
    prefix = str(path).rstrip("/")
    found = []
    for info in infos:
        if info.type != pafs.FileType.File or info.base_name.startswith((".", "_")):
            continue
        if suffixes and not info.base_name.endswith(suffixes):
            continue
        found.append(prefix + info.path[len(inner.rstrip("/")) :])
    return sorted(found)


def concatenate(parts: list[str], target: str | Path) -> None:
    """Stream ``parts`` into ``target`` in order (bounded memory), then put it in place atomically."""
    fs, inner = resolve(target)
    if isinstance(fs, pafs.LocalFileSystem):
        with atomic_path(inner) as tmp, open(tmp, "wb") as out:
            _copy_parts(parts, out)
        return
    with fs.open_output_stream(inner) as out:
        _copy_parts(parts, out)


def _copy_parts(parts: list[str], out) -> None:
    for part in parts:
        part_fs, part_inner = resolve(part)
        with part_fs.open_input_stream(part_inner) as handle:
            while chunk := handle.read(_CHUNK):
                out.write(chunk)


def iter_jsonl(path: str | Path):
    """The JSON values of a JSONL file, streamed a chunk at a time (bounded memory, any filesystem)."""
    import json

    fs, inner = resolve(path)
    with fs.open_input_stream(inner) as handle:
        buffer = b""
        while chunk := handle.read(_CHUNK):
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            yield from (json.loads(line) for line in lines if line.strip())
        if buffer.strip():
            yield json.loads(buffer)


def read_parquet(path: str, columns: list[str] | None = None) -> pa.Table:
    """A Parquet file (or some of its columns) from a local path or an object store."""
    fs, inner = resolve(path)
    return pq.read_table(inner, columns=columns, filesystem=fs)


def write_table(path: str, table: pa.Table) -> None:
    """A Parquet file written atomically, to a local path or an object store."""
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    write_bytes(path, buffer.getvalue())


def write_json_atomic(path: str | Path, data) -> Path:
    """Indented UTF-8 JSON (numpy values as plain numbers), written atomically by ``write_text``."""
    path = Path(path)
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False, default=_jsonable) + "\n")
    return path


def _jsonable(value):
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON serializable: {type(value)}")
