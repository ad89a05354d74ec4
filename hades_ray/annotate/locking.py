"""One lock per round folder, held while an import or an export picks its number and writes its files.

Two imports (or exports) started at once would otherwise pick the same ``import-NNN`` and one could
lose its judgments while reporting success. ``flock`` is released by the kernel when a process dies,
so a crashed import never leaves the round locked.
"""

from __future__ import annotations

import fcntl
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hades_ray.pipeline import storage

LOCK_NAME = ".lock"


@contextmanager
def round_lock(directory: str | Path) -> Iterator[Path]:
    """Hold the exclusive lock of ``directory`` (created if needed) for the ``with`` block."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / LOCK_NAME, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield directory
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def copy_new(source: str | Path, target: str | Path) -> Path:
    """Copy ``source`` to a new file ``target`` through a unique temporary name; never overwrites."""
    target = Path(target)
    with storage.atomic_path(target, replace=False) as tmp:
        shutil.copyfile(source, tmp)
    return target


def write_new_text(text: str, target: str | Path) -> Path:
    """Write ``text`` to a new file ``target`` through a unique temporary name; never overwrites."""
    target = Path(target)
    with storage.atomic_path(target, replace=False) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return target
