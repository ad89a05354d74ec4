"""A config key is declared once, in its section's field (``config_keys.key``: type, default, range,
choices, help), and the flags that set keys are made from that declaration; every flag of every command
has a help line."""

from __future__ import annotations

import argparse
import ast
import dataclasses
from pathlib import Path

import hades_ray
from tests import source_trees
from hades_ray.cli import build_parser
from hades_ray.config import default_config, key_field

ROOT = Path(hades_ray.__file__).parent


def _commands(parser: argparse.ArgumentParser, path: str = "hades-ray"):
    """``(command path, its parser)`` of every command and subcommand."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, f"{path} {name}")


def _config_keys(section, prefix: str = ""):
    for item in dataclasses.fields(section):
        value = getattr(section, item.name)
        yield from (
            _config_keys(value, f"{prefix}{item.name}.") if dataclasses.is_dataclass(value) else [prefix + item.name]
        )


def test_every_flag_of_every_command_has_a_help_line():
    missing, flags = [], 0
    for path, parser in _commands(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                missing += [f"{path} {c.dest}" for c in action._choices_actions if not c.help]
            elif not isinstance(action, argparse._HelpAction):
                flags += 1
                if not action.help or action.help == argparse.SUPPRESS:
                    missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    assert flags > 200 and missing == []


def test_flags_that_set_keys_are_made_from_their_declaration():
    made = 0
    for path, parser in _commands(build_parser()):
        for action in parser._actions:
            key = getattr(action, "key", None)
            if not key:
                continue
            declared = key_field(key)[1].metadata
            assert action.help.startswith(declared["help"]), (path, action.option_strings)
            assert tuple(action.choices or ()) in ((), declared["choices"]), (path, action.option_strings)
            made += 1
    assert made > 50


def test_a_config_key_is_declared_in_one_place():
    assert not (ROOT / "config_bounds.py").exists()  # the table of ranges that stood beside the fields
    keys = set(_config_keys(default_config()))
    tables, rules = [], []
    for path in source_trees.files(ROOT):
        for node in source_trees.nodes(path):
            # A table from key names to what they allow (a range, choices or a help line): a second declaration.
            if isinstance(node, ast.Dict):
                named = [k.value for k in node.keys if isinstance(k, ast.Constant) and k.value in keys]
                if named and all(isinstance(v, ast.Constant) and isinstance(v.value, str) for v in node.values):
                    tables.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            # A section's own rules compare keys with each other; one key against constants is its declaration's.
            if path.name == "settings.py" and isinstance(node, ast.FunctionDef) and node.name == "validate":
                rules += [f"{path.relative_to(ROOT)}:{line}" for line in _one_key_rules(node)]
    assert tables == [] and rules == []


def _one_key_rules(validate: ast.FunctionDef) -> list[int]:
    """Lines of the rules in ``validate`` that hold one key (``self.x``, ``self.x.y``) against constants
    only, such as ``self.mode in MODES`` or ``self.epochs >= 1``: a range or choices declared twice."""
    conditions = [n.test for n in ast.walk(validate) if isinstance(n, ast.If)]
    conditions += [  # require((ok, message), ...)
        n.elts[0]
        for n in ast.walk(validate)
        if isinstance(n, ast.Tuple) and len(n.elts) == 2 and isinstance(n.elts[1], (ast.Constant, ast.JoinedStr))
    ]
    lines = []
    for condition in conditions:
        named = {ast.unparse(n) for n in ast.walk(condition) if isinstance(n, ast.Attribute)}
        keys = {k for k in named if k.startswith("self.") and not any(o.startswith(k + ".") for o in named)}
        for compare in (n for n in ast.walk(condition) if isinstance(n, ast.Compare)):
            sides = [compare.left, *compare.comparators]
            constants = [s for s in sides if isinstance(s, (ast.Constant, ast.Name, ast.Tuple, ast.UnaryOp))]
            if len(keys) == 1 and {ast.unparse(s) for s in sides} - {ast.unparse(c) for c in constants} == keys:
                lines.append(compare.lineno)
    return lines
