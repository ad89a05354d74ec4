"""Every ```python block of the README, run as written, in order and in one namespace (as a reader
pastes them into one notebook), on the tests' micro models: ``local:gpt2`` is the micro kit's GPT-2
(``micro_home``), and ``out/detector-online`` (the folder the README's ``hades-ray train`` line names)
is a micro online detector made in a fresh working directory. An example that stops working fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


def python_blocks() -> list[str]:
    return BLOCK.findall(README.read_text(encoding="utf-8"))


def test_the_readme_has_a_python_example_for_each_capability():
    code = "\n".join(python_blocks())
    for name in (
        "Detector.open",
        ".to(",
        ".score(",
        ".stream(",
        ".feed(",
        "TextIteratorStreamer",
        "stopping_criteria",
        "guarded_generate",
    ):
        assert name in code, name


def test_every_python_block_runs_as_written(micro_home, tmp_path, monkeypatch, capsys):
    from tests.detectors import detector_folder

    detector_folder(tmp_path / "out" / "detector-online", str(micro_home / "models" / "gpt2"), "online", 160)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "readme"}
    for k, block in enumerate(python_blocks()):
        try:
            exec(compile(block, f"README.md python block {k + 1}", "exec"), namespace)
        except Exception as error:  # noqa: BLE001 - name the block that broke
            pytest.fail(f"README python block {k + 1} failed: {type(error).__name__}: {error}")
    assert capsys.readouterr().out.strip()  # the examples print what they show
    assert namespace["one"] == namespace["det"].score(namespace["texts"][0])
