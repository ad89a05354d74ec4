"""The counts of issue 39 ("rooms that hold one thing"), read from the code with AST walks.

``python -m tests.rooms`` prints them as a table; tests/test_rooms.py holds the ones that must stay at
their target. Each count says what it looks for, so a reader can check it against the code by hand."""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

import hades_ray
from tests import source_trees

ROOT = Path(hades_ray.__file__).parent
REPO = ROOT.parent
JOBS = REPO / "jobs"


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(REPO)}:{getattr(node, 'lineno', 0)}"


def _package(path: Path) -> str:
    return path.relative_to(ROOT).parts[0] if len(path.relative_to(ROOT).parts) > 1 else path.stem


def entity_alias_literals() -> list[str]:
    """spaCy's short entity labels (``"PER"``, ``"LOC"``, ``"MISC"``) written outside text/: an alias table
    kept where the language's own entity labels do not reach."""
    return [
        _where(path, node)
        for path in source_trees.files(ROOT)
        if _package(path) != "text"
        for node in source_trees.nodes(path)
        if isinstance(node, ast.Constant) and node.value in ("PER", "LOC", "MISC")
    ]


TAG_ATTRIBUTES = {"ents", "ent_type_", "ent_iob_", "label_"}


def span_taggers() -> list[str]:
    """Modules that read spaCy's entity annotations themselves (``doc.ents``, ``token.ent_type_``...)."""
    found = set()
    for path in source_trees.files(ROOT):
        if any(isinstance(n, ast.Attribute) and n.attr in TAG_ATTRIBUTES for n in source_trees.nodes(path)):
            found.add(str(path.relative_to(REPO)))
    return sorted(found)


def imports_between(first: str, second: str) -> list[str]:
    """Imports (module-level or inside a function) from package ``first`` into ``second`` and back."""
    from tests.test_layering import _package_graph

    _, imports = _package_graph()
    top = lambda name: name.split(".")[0]  # noqa: E731
    return sorted(
        str(i)
        for i in imports
        if {top(i.importer), top(i.target)} == {first, second} and top(i.importer) != top(i.target)
    )


def _flag_calls(root: Path):
    """Each flag declaration: ``add_argument("--x", ...)``, and ``add_key_flag(parser, "section.key")``
    (cli_common's flag for a config key)."""
    for path in source_trees.files(root):
        for node in source_trees.nodes(path):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            first = node.args[0]
            if name == "add_argument" and isinstance(first, ast.Constant) and str(first.value).startswith("--"):
                yield path, node, first.value
            elif name == "add_key_flag" and len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                yield path, node, "--" + node.args[1].value.rsplit(".", 1)[-1].replace("_", "-")


def resume_flags() -> list[str]:
    """``--resume`` flags declared on top of the step rule (a rerun continues; ``--force`` redoes)."""
    return [_where(p, n) for root in (ROOT, JOBS) for p, n, flag in _flag_calls(root) if flag == "--resume"]


# A command's own operands: each command says what its input or output is, so these differ on purpose.
OPERANDS = {"--input", "--output", "--dataset", "--pool", "--workdir", "--detector", "--model", "--data"}


def flags_declared_twice() -> list[str]:
    """Flags of the package's commands (not their operands) declared by more than one ``add_argument`` with
    different defaults or types: one flag, two meanings (``--seed`` with its own default in two modules)."""
    meanings = defaultdict(set)
    places = defaultdict(list)
    for path, node, flag in _flag_calls(ROOT):
        if flag in OPERANDS:
            continue
        keywords = {k.arg: ast.unparse(k.value) for k in node.keywords if k.arg in ("default", "type", "action")}
        if getattr(node.func, "attr", getattr(node.func, "id", "")) == "add_key_flag":
            keywords = {"config key": ast.unparse(node.args[1])}
        meanings[flag].add(tuple(sorted(keywords.items())))
        places[flag].append(_where(path, node))
    return [f"{flag}: {', '.join(places[flag])}" for flag in sorted(meanings) if len(meanings[flag]) > 1]


def undocumented_packages() -> list[str]:
    """Package ``__init__.py`` files without a docstring saying what the package holds."""
    return [
        str(p.relative_to(REPO))
        for p in sorted(ROOT.rglob("__init__.py"))
        if not ast.get_docstring(source_trees.parsed(p))
    ]


def jobs_writes() -> list[str]:
    """Writes, renames and locks in jobs/ that do not go through hades_ray/pipeline (tests/test_writes.py)."""
    from tests.test_writes import writes_in

    return [w for p in sorted(JOBS.glob("*.py")) for w in writes_in(p, str(p.relative_to(REPO)))]


def lines(root: Path) -> int:
    return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in root.rglob("*.py"))


def counts() -> dict[str, list[str] | int]:
    from tests.test_language_value import defaulted_language_parameters, english_literals

    return {
        '"en" literals outside text/': english_literals(),
        "language parameters with a string default outside text/": defaulted_language_parameters(),
        "spaCy short entity labels outside text/": entity_alias_literals(),
        "modules reading spaCy entity annotations": span_taggers(),
        "imports between select/ and annotate/": imports_between("select", "annotate"),
        "--resume flags": resume_flags(),
        "flags declared twice with different meanings": flags_declared_twice(),
        "package __init__.py without a docstring": undocumented_packages(),
        "writes in jobs/ outside hades_ray/pipeline": jobs_writes(),
        "lines of hades_ray/": lines(ROOT),
        "lines of jobs/": lines(JOBS),
    }


def main() -> int:
    for name, found in counts().items():
        print(f"{name}: {found if isinstance(found, int) else len(found)}")
        if "-v" in sys.argv[1:] and isinstance(found, list):
            for item in found:
                print(f"    {item}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
