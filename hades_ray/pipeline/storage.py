"""Every file write of the project: paths local or URIs resolved through ``pyarrow.fs``, writes atomic
(pipeline/README.md, "Storage"); tests/test_writes.py keeps other modules from writing files themselves.
"""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from hades_ray.pipeline.errors import StoreError

_CHUNK = 8 * 1024 * 1024
READERS = 16  # concurrent requests to an object store: each waits on its latency, not on this process


def is_uri(path: str | Path) -> bool:
    return "://" in str(path)


def is_local(path: str | Path) -> bool:
    return not is_uri(path) or str(path).startswith("file://")


def _s3(uri: str) -> tuple[pafs.FileSystem, str]:
    from hades_ray.pipeline import s3

    return s3.filesystem(), uri.split("://", 1)[1].rstrip("/")


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


def write(path: str | Path, data: bytes | str, replace: bool = True) -> None:
    """Write ``data`` (text as UTF-8) so that readers see either nothing or all of it; ``replace=False``
    never overwrites (``FileExistsError``; on an object store a best-effort check)."""
    with open_atomic(path, "wb", replace=replace) as handle:
        handle.write(data.encode("utf-8") if isinstance(data, str) else data)


@contextmanager
def atomic_path(path: str | Path, replace: bool = True) -> Iterator[Path]:
    """A temporary local path beside ``path`` for the ``with`` block to write (streamed, or by a library
    that takes a file name); on success it is fsynced and put in place, so readers see either the old
    file or all of the new one. ``replace=False`` never overwrites: an existing ``path`` raises
    ``FileExistsError``. On any error the temporary file is removed and ``path`` is untouched.
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


@contextmanager
def open_atomic(path: str | Path, mode: str = "w", newline: str | None = None, replace: bool = True):
    """A file handle (``mode`` ``"w"``: UTF-8 text, ``"wb"``: bytes) whose file appears whole at the end
    of the ``with`` block, locally through ``atomic_path`` or as one object store PUT."""
    fs, inner = resolve(path)
    if isinstance(fs, pafs.LocalFileSystem):
        with (
            atomic_path(inner, replace) as tmp,
            open(tmp, mode, encoding=None if "b" in mode else "utf-8", newline=newline) as handle,
        ):
            yield handle
        return
    if not replace and exists(path):
        raise FileExistsError(str(path))
    with fs.open_output_stream(inner) as stream:
        if "b" in mode:
            yield stream
            return
        with io.TextIOWrapper(stream, encoding="utf-8", newline=newline) as handle:
            yield handle


@contextmanager
def staged_folder(target: str | Path) -> Iterator[Path]:
    """A new local folder beside ``target`` for the ``with`` block to fill; on success it replaces
    ``target`` (two renames, the old folder then removed), so a killed writer never leaves a
    half-written ``target``. On any error the staged folder is removed and ``target`` is untouched."""
    target = Path(target)
    stage = target.with_name(f".{target.name}.{uuid.uuid4().hex}.partial")
    stage.mkdir(parents=True)
    old = stage.with_suffix(".old")
    try:
        yield stage
        if target.exists():
            target.rename(old)
        stage.rename(target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)


def copy_folder(source: str | Path, target: str | Path) -> None:
    """A copy of the local folder ``source`` (symbolic links copied as links) in place of ``target``, put
    there whole through ``staged_folder``: a killed copy leaves ``target`` as it was."""
    with staged_folder(target) as stage:
        shutil.copytree(source, stage, symlinks=True, dirs_exist_ok=True)


@contextmanager
def scratch_folder(prefix: str) -> Iterator[Path]:
    """A temporary local folder, removed with what it holds at the end of the ``with`` block."""
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        yield Path(folder)


def save_pretrained(obj, folder: str | Path) -> None:
    """A Hugging Face model or tokenizer's ``save_pretrained`` files, into a local ``folder``."""
    obj.save_pretrained(str(folder))


def save_safetensors(state: dict, path: str | Path) -> None:
    """Tensors as a safetensors file, written atomically."""
    from safetensors.torch import save_file

    with atomic_path(path) as tmp:
        save_file(state, str(tmp))


def delete(path: str | Path) -> None:
    """Remove a file, or a folder with everything under it; nothing to remove is not an error."""
    fs, inner = resolve(path)
    kind = fs.get_file_info(inner).type
    if kind == pafs.FileType.File:
        fs.delete_file(inner)
    elif kind == pafs.FileType.Directory:
        fs.delete_dir(inner)


@dataclass(frozen=True)
class Listed:
    """A file as a folder listing shows it: one LIST request per 1,000 files on an object store."""

    path: str  # in the same form as the folder given (URI or local path)
    size: int
    mtime_ns: int  # the store's resolution: seconds on S3


def list_infos(path: str | Path, suffixes: tuple[str, ...] = (), recursive: bool = True) -> list[Listed]:
    """Files under a folder with their sizes and modification times, sorted by path; hidden names skipped."""
    fs, inner = resolve(path)
    infos = fs.get_file_info(pafs.FileSelector(inner, recursive=recursive, allow_not_found=True))
    prefix = str(path).rstrip("/")
    found = []
    for info in infos:
        if info.type != pafs.FileType.File or info.base_name.startswith((".", "_")):
            continue
        if suffixes and not info.base_name.endswith(suffixes):
            continue
        found.append(Listed(prefix + info.path[len(inner.rstrip("/")) :], info.size or 0, info.mtime_ns or 0))
    return sorted(found, key=lambda listed: listed.path)


def list_files(path: str | Path, suffixes: tuple[str, ...] = (), recursive: bool = True) -> list[str]:
    """Files under a folder (sorted URIs or paths, in the same form as ``path``); hidden names skipped."""
    return [listed.path for listed in list_infos(path, suffixes, recursive)]


def read_texts(paths: list[str]) -> list[str]:
    """Several files' texts, read concurrently from an object store (each request waits on the network)."""
    if not paths or all(is_local(p) for p in paths):
        return [read_text(p) for p in paths]
    with ThreadPoolExecutor(max_workers=READERS) as pool:
        return list(pool.map(read_text, paths))


def concatenate(parts: list[str], target: str | Path) -> None:
    """Stream ``parts`` into ``target`` in order (bounded memory), then put it in place atomically; parts
    on an object store are fetched ``READERS`` at a time, ahead of the writer."""
    with open_atomic(target, "wb") as out:
        if all(is_local(p) for p in parts):
            for part in parts:
                part_fs, part_inner = resolve(part)
                with part_fs.open_input_stream(part_inner) as handle:
                    while chunk := handle.read(_CHUNK):
                        out.write(chunk)
            return
        with ThreadPoolExecutor(max_workers=READERS) as pool:
            for lo in range(0, len(parts), READERS):
                for data in pool.map(read_bytes, parts[lo : lo + READERS]):
                    out.write(data)


def iter_jsonl(path: str | Path):
    """The JSON values of a JSONL file, streamed a chunk at a time (bounded memory, any filesystem)."""
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
    with open_atomic(path, "wb") as handle:
        pq.write_table(table, handle)


def write_json_atomic(path: str | Path, data) -> Path:
    """Indented UTF-8 JSON (numpy values as plain numbers), written atomically by ``write``."""
    path = Path(path)
    write(path, json.dumps(data, indent=2, ensure_ascii=False, default=_jsonable) + "\n")
    return path


def _jsonable(value):
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON serializable: {type(value)}")


def explain(error: BaseException, output: str | Path) -> StoreError | None:
    """A one-line ``StoreError`` for a failure of the output's disk or store anywhere in ``error``'s chain
    (a Ray task's error holds its worker's as ``cause``), or None for any other error."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno == errno.ENOSPC:
            where = f" ({error.filename})" if error.filename else ""
            return StoreError(f"{output}: no space left on the device that holds it{where}; free space (or write to "
                              "another --output) and rerun: finished shards are kept")  # fmt: skip
        text = str(error).strip().splitlines()[0] if str(error).strip() else ""
        botocore = type(error).__module__.startswith("botocore")  # the lock's client, past its retries
        if (isinstance(error, OSError) and "AWS Error" in text) or botocore:
            return StoreError(f"{output}: the object store kept failing through every retry ({text}); rerun once it "
                              "answers: finished shards are kept")  # fmt: skip
        error = getattr(error, "cause", None) or error.__cause__ or error.__context__
    return None
