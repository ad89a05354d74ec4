"""One write path and one lock: outside ``hades_ray/pipeline/`` no module of the package or of ``jobs/``
writes, renames, copies, deletes or locks a file itself; it calls ``pipeline/storage.py`` (atomic writes,
local or object store) or ``pipeline/lock.py``. The AST of every module is walked (function-level code
too); a library that writes into an in-memory buffer (``io.BytesIO``) or into a handle from
``storage.open_atomic`` is not a file write."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import hades_ray
from tests import source_trees

ROOT = Path(hades_ray.__file__).parent
JOBS = ROOT.parent / "jobs"  # the benchmarks and recipes, held to the package's rule
OUTSIDE = sorted(p for p in ROOT.rglob("*.py") if "pipeline" not in p.relative_to(ROOT).parts[:1])
OUTSIDE += sorted(JOBS.glob("*.py"))

WRITE_MODE = set("wax+")
# Methods that touch the file system whatever they are called on (pathlib's writers, Hugging Face's saves).
FS_METHODS = {"write_text", "write_bytes", "save_pretrained", "mkdir", "touch", "unlink", "rmdir", "symlink_to",
              "hardlink_to"}  # fmt: skip
# Module functions that write, move or delete: ``os.replace``, ``shutil.rmtree``...
OS_WRITERS = {"replace", "rename", "renames", "link", "symlink", "unlink", "remove", "removedirs", "rmdir", "mkdir",
              "makedirs", "truncate"}  # fmt: skip
SHUTIL_WRITERS = {"copy", "copy2", "copyfile", "copymode", "copystat", "copytree", "move", "rmtree", "make_archive",
                  "unpack_archive"}  # fmt: skip
ALWAYS_MODULES = {"tempfile", "fcntl"}  # any use is a temporary file or a lock
# Library writers: the argument that names where they write, which must be a buffer or an atomic handle.
TARGET_ARG = {"save": 1, "dump": 1, "safe_dump": 1, "write_table": 1, "save_npz": 0, "savez": 0,
              "savez_compressed": 0, "savetxt": 0, "savefig": 0, "to_parquet": 0, "to_csv": 0, "to_json": 0,
              "to_excel": 0, "to_feather": 0, "write_parquet": 0, "write_json": 0, "write_csv": 0}  # fmt: skip
ALWAYS_CALLS = {"save_file", "serialize_file"}  # safetensors' file writers take a file name only
CREATE_FLAGS = {"O_CREAT", "O_EXCL", "O_TRUNC", "O_APPEND"}
BUFFERS = {"BytesIO", "StringIO"}


def _name(node: ast.expr) -> str:
    """``a.b.c`` for a name or an attribute chain, "" otherwise."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _name(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return ""


def _argument(call: ast.Call, index: int, keywords: tuple[str, ...]) -> ast.expr | None:
    if len(call.args) > index:
        return call.args[index]
    return next((k.value for k in call.keywords if k.arg in keywords), None)


def _writes_mode(mode: ast.expr | None) -> bool:
    if mode is None:
        return False
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return bool(WRITE_MODE & set(mode.value))
    return True  # a mode computed at run time may write


def _safe_targets(scope: ast.AST) -> set[str]:
    """Names that hold an in-memory buffer or an atomic handle of ``storage`` in this scope, and the
    functions imported from ``storage``."""
    safe = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.ImportFrom) and node.module == "hades_ray.pipeline.storage":
            safe |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            if _name(node.value.func).split(".")[-1] in BUFFERS:
                safe |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                call = item.context_expr
                if isinstance(call, ast.Call) and isinstance(item.optional_vars, ast.Name):
                    if _name(call.func).split(".")[-1] == "open_atomic":
                        safe.add(item.optional_vars.id)
    return safe


def _call_problem(call: ast.Call, safe: set[str]) -> str:
    name = _name(call.func)
    parts = name.split(".")
    last, module = parts[-1], parts[0] if len(parts) > 1 else ""
    if module == "storage" or name in safe:  # the write path itself, or a name imported from it
        return ""
    if name in ("open", "io.open", "os.fdopen"):
        index = 0 if name == "os.fdopen" else 1
        return f"{name}() for writing" if _writes_mode(_argument(call, index, ("mode",))) else ""
    if name == "os.open":
        flags = {n.attr for n in ast.walk(call) if isinstance(n, ast.Attribute)} & CREATE_FLAGS
        return f"os.open() with {', '.join(sorted(flags))}" if flags else ""
    if isinstance(call.func, ast.Attribute) and last == "open":  # Path.open(mode)
        mode = _argument(call, 0, ("mode",))
        literal = isinstance(mode, ast.Constant) or any(k.arg == "mode" for k in call.keywords)
        return f"{name}() for writing" if literal and _writes_mode(mode) else ""
    if module in ALWAYS_MODULES or last in ALWAYS_CALLS:
        return f"{name}()"
    if (module == "os" and last in OS_WRITERS) or (module == "shutil" and last in SHUTIL_WRITERS):
        return f"{name}()"
    if isinstance(call.func, ast.Attribute) and last in FS_METHODS:
        return f".{last}()"
    if isinstance(call.func, ast.Attribute) and last == "rename" and len(call.args) == 1 and not call.keywords:
        return ".rename()"  # Path.rename(target); pandas' rename takes keywords
    if last in TARGET_ARG and (last != "save" or module == "torch") and (last != "dump" or module != ""):
        target = _argument(call, TARGET_ARG[last], ("path", "fname", "file", "f", "stream", "where", "path_or_buf"))
        if target is not None and not (isinstance(target, ast.Name) and target.id in safe):
            return f"{name}() into a file"
    return ""


def _import_problem(node: ast.Import | ast.ImportFrom) -> str:
    if isinstance(node, ast.Import):
        modules = {a.name for a in node.names} & ALWAYS_MODULES
        return f"import {', '.join(sorted(modules))}" if modules else ""
    names = {a.name for a in node.names}
    if node.module in ALWAYS_MODULES or (node.module == "os" and names & OS_WRITERS):
        return f"from {node.module} import {', '.join(sorted(names))}"
    if node.module == "shutil" and names & SHUTIL_WRITERS:
        return f"from shutil import {', '.join(sorted(names))}"
    if node.module and node.module.startswith("safetensors") and names & ALWAYS_CALLS:
        return f"from {node.module} import {', '.join(sorted(names & ALWAYS_CALLS))}"
    return ""


def writes_in(source: str | Path, where: str) -> list[str]:
    """``where:line: what`` for every file write, rename, copy, delete or lock in ``source`` (a file's
    text, or the file)."""
    tree = source_trees.parsed(source) if isinstance(source, Path) else ast.parse(source)
    found = []
    scopes = [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    seen: set[int] = set()
    module_safe = _safe_targets(tree)
    for scope in reversed(scopes):  # innermost functions first: a call belongs to the closest scope
        safe = _safe_targets(scope) | module_safe
        for node in ast.walk(scope):
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, ast.Call):
                problem = _call_problem(node, safe)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                problem = _import_problem(node)
            else:
                continue
            if problem:
                found.append((node.lineno, f"{where}:{node.lineno}: {problem}"))
    return [text for _, text in sorted(found)]


def test_the_rule_holds_jobs_too():
    assert {p.name for p in OUTSIDE if p.parent == JOBS} >= {"bench_common.py", "bench_guard.py", "demo_loop.py"}


def test_no_write_rename_or_lock_outside_pipeline():
    found = [w for p in OUTSIDE for w in writes_in(p, str(p.relative_to(ROOT.parent)))]
    assert not found, (
        "write through hades_ray/pipeline/storage.py and lock through hades_ray/pipeline/lock.py:\n" + "\n".join(found)
    )


FLAGGED = {
    'open(p, "w")': "open() for writing",
    'open(p, mode="ab")': "open() for writing",
    'path.open("w", encoding="utf-8")': "path.open() for writing",
    'Path(p).write_text("x")': ".write_text()",
    "p.write_bytes(b)": ".write_bytes()",
    "model.save_pretrained(folder)": ".save_pretrained()",
    "folder.mkdir(parents=True)": ".mkdir()",
    "p.unlink(missing_ok=True)": ".unlink()",
    "stage.rename(target)": ".rename()",
    "os.replace(a, b)": "os.replace()",
    "os.link(a, b)": "os.link()",
    "shutil.rmtree(folder)": "shutil.rmtree()",
    "shutil.copyfile(a, b)": "shutil.copyfile()",
    "tempfile.mkdtemp()": "tempfile.mkdtemp()",
    "fcntl.flock(handle, fcntl.LOCK_EX)": "fcntl.flock()",
    "os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY)": "os.open() with O_CREAT, O_EXCL",
    "save_file(state, p)": "save_file()",
    "torch.save(state, p)": "torch.save() into a file",
    "json.dump(data, handle)": "json.dump() into a file",
    "fig.savefig(p)": "fig.savefig() into a file",
    "pq.write_table(table, p)": "pq.write_table() into a file",
    "frame.to_parquet(p)": "frame.to_parquet() into a file",
    "sp.save_npz(p, counts)": "sp.save_npz() into a file",
    "import fcntl": "import fcntl",
    "from shutil import copyfile": "from shutil import copyfile",
}
NOT_WRITES = [
    'open(p, encoding="utf-8")',
    'path.open("rb")',
    "Detector.open(folder)",
    "frame.rename(columns={'H': 'n_h'})",
    "text.replace('a', 'b')",
    "os.open(os.devnull, os.O_WRONLY)",
    "buffer = io.BytesIO()\nfig.savefig(buffer, format='png')\npq.write_table(table, buffer)",
    "with storage.open_atomic(p, 'wb') as handle:\n    torch.save(state, handle)\n    json.dump(data, handle)",
    "frame.to_csv()",
    "storage.write_table(path, table)",
    "from hades_ray.pipeline.storage import write_table\nwrite_table(path, table)",
    "record.to_json()",
    "shutil.which('git')",
]


@pytest.mark.parametrize("snippet", sorted(FLAGGED))
def test_each_kind_of_write_is_found(snippet):
    assert writes_in(snippet, "x.py") == [f"x.py:1: {FLAGGED[snippet]}"]


@pytest.mark.parametrize("snippet", NOT_WRITES)
def test_reads_and_in_memory_writes_are_not_flagged(snippet):
    assert writes_in(snippet, "x.py") == []
