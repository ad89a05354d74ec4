"""The project's source files as the code checks read them (tests/rooms.py, tests/test_layering.py,
tests/test_writes.py, tests/test_language_value.py, tests/test_config_keys.py): each file parsed once a
process and its nodes listed once. Six checks each parsing and walking every file again were most of
their ~35 s in make test. The trees are shared: a check reads them and never changes them."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path


@cache
def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


@cache
def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of the file, in ``ast.walk``'s order."""
    return tuple(ast.walk(parsed(path)))


def files(root: Path) -> list[Path]:
    """Every ``.py`` file under ``root``, sorted by path (the order the checks list what they find in)."""
    return sorted(root.rglob("*.py"))
