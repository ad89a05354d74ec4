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
