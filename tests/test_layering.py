"""Floors run one way: every import of ``hades_ray`` (module-level or inside a function) goes to the
importer's floor or below, no modules or floor entries import each other in a cycle, and no package
imports another package's private names. The floors are written down in hades_ray/floors.py."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

import hades_ray
from hades_ray.floors import FLOORS, floor_of, unit_of
from tests import source_trees

ROOT = Path(hades_ray.__file__).parent


@dataclass(frozen=True)
class Import:
    importer: str  # dotted, without "hades_ray."
    target: str  # the imported module (a name imported from a module counts as that module)
    name: str  # the name imported, "" for ``import x``
    where: str  # file:line

    def __str__(self) -> str:
        shown = f"{self.target}.{self.name}" if self.name else self.target
        return f"{self.where}: {self.importer} imports {shown}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = ["hades_ray", *importer.split(".")] if importer else ["hades_ray"]
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports_of(path: Path, modules: set[str]) -> list[Import]:
    importer, is_package = _module_name(path), path.name == "__init__.py"
    found, file = [], path.relative_to(ROOT.parent)
    for node in source_trees.nodes(path):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        where = f"{file}:{node.lineno}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("hades_ray."):
                    found.append(Import(importer, alias.name.removeprefix("hades_ray."), "", where))
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node, importer, is_package)
            if source != "hades_ray" and not source.startswith("hades_ray."):
                continue
            source = source.removeprefix("hades_ray").removeprefix(".")
            for alias in node.names:
                submodule = f"{source}.{alias.name}" if source else alias.name
                if submodule in modules:  # ``from hades_ray.select import filters`` imports a module
                    found.append(Import(importer, submodule, "", where))
                else:
                    found.append(Import(importer, source, alias.name, where))
    return found


@cache
def _package_graph() -> tuple[set[str], list[Import]]:
    paths = source_trees.files(ROOT)
    modules = {_module_name(p) for p in paths}
    return modules, [i for p in paths for i in _imports_of(p, modules)]


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def _explain(component: list[str], imports: list[Import], key) -> str:
    members = set(component)
    inside = [
        str(i) for i in imports if key(i.importer) != key(i.target) and {key(i.importer), key(i.target)} <= members
    ]
    return " <-> ".join(component) + "\n    " + "\n    ".join(inside)


MODULES, IMPORTS = _package_graph()


def test_every_module_has_a_floor():
    assert not sorted(m for m in MODULES if unit_of(m) is None), "add these to hades_ray/floors.py"


def test_every_floor_entry_names_a_module():
    stale = [e for floor in FLOORS for e in floor if not any(unit_of(m) == e for m in MODULES)]
    assert not stale, f"hades_ray/floors.py names what no longer exists: {stale}"


def test_no_import_from_a_higher_floor():
    upward = [
        f"{i} (floor {floor_of(unit_of(i.importer))} {unit_of(i.importer)} -> "
        f"floor {floor_of(unit_of(i.target))} {unit_of(i.target)})"
        for i in IMPORTS
        if floor_of(unit_of(i.target)) > floor_of(unit_of(i.importer))
    ]
    assert not upward, "imports from a higher floor:\n" + "\n".join(upward)


@pytest.mark.parametrize("level", ["module", "floor entry"])
def test_no_import_cycle(level):
    key = (lambda m: m) if level == "module" else unit_of
    edges: dict[str, set[str]] = {}
    for i in IMPORTS:
        if key(i.importer) != key(i.target):
            edges.setdefault(key(i.importer), set()).add(key(i.target))
    cycles = _cycles(edges)
    assert not cycles, f"{level} import cycles:\n" + "\n".join(_explain(c, IMPORTS, key) for c in cycles)


def test_no_private_name_imported_from_another_package():
    def package(module: str) -> str:
        return module.split(".")[0]

    private = [
        str(i)
        for i in IMPORTS
        if package(i.importer) != package(i.target)
        and (i.name.startswith("_") or any(p.startswith("_") and p != "__main__" for p in i.target.split(".")))
    ]
    assert not private, "private names imported across packages:\n" + "\n".join(private)


PACKAGES = sorted(p.parent.name for p in ROOT.glob("*/__init__.py"))


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_says_what_it_holds_and_what_it_must_not_import(package):
    """The package's docstring: what it holds, then ``Must not import:`` naming exactly the packages on the
    floors above its own (the floors themselves are written once, in floors.py; this keeps the line true)."""
    doc = ast.get_docstring(source_trees.parsed(ROOT / package / "__init__.py")) or ""
    assert len(doc.split("\n\n")[0]) > 40, f"hades_ray/{package}/__init__.py: say in a line or two what it holds"
    rule = doc.partition("Must not import:")[2].split("(")[0].split("nor any")[0]
    named = {word.strip(" ,.\n") for word in rule.replace("\n", " ").split(",")} - {"any cli.py", ""}
    above = {other for other in PACKAGES if floor_of(unit_of(other)) > floor_of(unit_of(package))}
    assert "Must not import:" in doc and named == above, (
        f"hades_ray/{package}/__init__.py: 'Must not import:' should name {sorted(above)}, names {sorted(named)}"
    )


def test_select_and_annotate_do_not_import_each_other():
    """Rounds and the judges' commands share the work folder through pool/ (its layout, the pool's features,
    the consensus labels); neither owns what the other reads, so neither imports the other, even in a function."""
    from tests.rooms import imports_between

    crossing = imports_between("select", "annotate")
    assert not crossing, "select/ and annotate/ import each other (share it through pool/):\n" + "\n".join(crossing)
