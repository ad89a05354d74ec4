"""Each package's ``__init__.py`` says what it holds and, on a ``Must not import:`` line, which packages it
must not import; this walks every module of the package (imports inside functions too) and holds it to
that. The import graph's layering is stated once, in the packages themselves."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hades_ray"
PACKAGES = sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))
RULE = re.compile(r"Must not import:\s*(.*?)(?:\(|\.\s*$|\.\s*\n)", re.S | re.M)


def forbidden(package: str) -> set[str]:
    doc = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text(encoding="utf-8"))) or ""
    match = RULE.search(doc + "\n")
    return {name.strip() for name in match.group(1).replace("\n", " ").split(",")} if match else set()


def imported_packages(path: Path) -> set[tuple[str, int]]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
        names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
        found |= {(n.split(".")[1], node.lineno) for n in names if n.startswith("hades_ray.") and "." in n}
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_says_what_it_holds_and_what_it_must_not_import(package):
    doc = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text(encoding="utf-8")))
    assert doc and len(doc.split("\n\n")[0]) > 40, f"hades_ray/{package}/__init__.py: say what the package holds"
    rule = forbidden(package)
    assert rule, f"hades_ray/{package}/__init__.py: no 'Must not import:' line"
    assert rule <= set(PACKAGES), f"hades_ray/{package}: unknown packages {sorted(rule - set(PACKAGES))}"


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_imports_what_its_package_must_not(package):
    rule = forbidden(package)
    broken = sorted(
        f"{path.relative_to(PACKAGE.parent)}:{line} imports hades_ray.{target}"
        for path in (PACKAGE / package).rglob("*.py")
        for target, line in imported_packages(path)
        if target in rule
    )
    assert not broken, "\n".join(broken)


def test_the_rule_is_read_from_the_docstring():
    assert {"train", "select"} <= forbidden("detect") and "detect" not in forbidden("detect")
    assert forbidden("text") >= {"io", "pipeline", "detect"}
