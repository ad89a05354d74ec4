"""The top-level parser: every command module registers, and one that cannot import is an error to see."""

from __future__ import annotations

import pytest

from hades_ray import cli


def test_every_command_module_registers_its_commands():
    parser = cli.build_parser()
    commands = parser._subparsers._group_actions[0].choices  # argparse keeps the sub-commands there
    for command in (
        "models",
        "perturb",
        "train",
        "tune",
        "round",
        "annotations",
        "dataset",
        "score",
        "serve",
        "generate",
        "report",
        "plan",
        "languages",
        "reproduce",
    ):
        assert command in commands, command


def test_a_command_module_that_fails_to_import_is_not_left_out_in_silence(monkeypatch):
    monkeypatch.setattr(cli, "COMMAND_MODULES", (*cli.COMMAND_MODULES, "hades_ray.no_such_stage.cli"))
    with pytest.raises(ModuleNotFoundError, match="no_such_stage"):
        cli.build_parser()


def _flag_declarations() -> list[tuple[str, str, str]]:
    """(flag, help text or "", file:line) of every ``add_argument("--flag", ...)`` in the package."""
    import ast
    from pathlib import Path

    import hades_ray

    root = Path(hades_ray.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
                help_text = next((ast.unparse(k.value) for k in node.keywords if k.arg == "help"), "")
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and str(arg.value).startswith("--"):
                        found.append((arg.value, help_text, f"{path.relative_to(root.parent)}:{node.lineno}"))
    return found


# Flags every command means the same way: declared once, in hades_ray/cli_common.py (--seed from the config key).
SHARED_FLAGS = ("--seed", "--force", "--executor", "--set", "--preset", "--config", "--workdir", "--model")


def test_each_flag_is_declared_once():
    declarations = _flag_declarations()
    assert not [d for d in declarations if d[0] == "--resume"], "--force is the one override of a step's skip"
    shared = [d for d in declarations if d[0] in SHARED_FLAGS and not d[2].startswith("hades_ray/cli_common.py")]
    # --workdir where a command says what its work directory must hold (report: optional; round-detector)
    shared = [d for d in shared if not (d[0] == "--workdir" and d[1] != "WORKDIR_HELP")]
    assert not shared, f"declare these with hades_ray/cli_common.py's helpers: {shared}"
    copies: dict[tuple[str, str], list[str]] = {}
    for flag, help_text, where in declarations:
        copies.setdefault((flag, help_text), []).append(where)
    repeated = {key: places for key, places in copies.items() if len(places) > 1}
    assert not repeated, f"one flag, one help line, declared in more than one place: {repeated}"
