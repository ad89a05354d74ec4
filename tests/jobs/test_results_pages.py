"""The results pages the README cites: each names, at its top, the commit it was made at and the command
that made it, and that command still parses with today's command line (``hades-ray ...`` with its
parser, ``python jobs/X.py ...`` with the job's own), so a reader can run it as written."""

from __future__ import annotations

import argparse
import re
import runpy
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "jobs" / "results"
HEAD_LINES = 8  # where a page names its commit and command
COMMAND = re.compile(r"`((?:hades-ray|python jobs/[\w./-]+\.py)(?: [^`]*)?)`")
COMMIT = re.compile(r"commit `?[0-9a-f]{7,40}`?")


def cited_pages() -> list[str]:
    return sorted(set(re.findall(r"jobs/results/([\w.-]+\.md)", (ROOT / "README.md").read_text(encoding="utf-8"))))


def head(page: str) -> str:
    return "\n".join((RESULTS / page).read_text(encoding="utf-8").splitlines()[:HEAD_LINES])


class Parsed(Exception):
    """Raised by the patched parser once a command's arguments parse."""


def parses(command: str, monkeypatch) -> argparse.Namespace:
    """The namespace ``command`` parses to; a command that does not parse fails the test with argparse's
    message (its SystemExit), naming the command."""
    words = shlex.split(command)
    original = argparse.ArgumentParser.parse_args

    def parse_and_stop(self, args=None, namespace=None):
        raise Parsed(original(self, args, namespace))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_and_stop)
    try:
        if words[0] == "hades-ray":
            from hades_ray.cli import build_parser

            build_parser().parse_args(words[1:])
        else:
            script = ROOT / words[1]
            assert script.is_file(), f"{command}: no {words[1]}"
            monkeypatch.setattr(sys, "argv", [str(script), *words[2:]])
            runpy.run_path(str(script), run_name="__main__")
    except Parsed as parsed:
        return parsed.args[0]
    except SystemExit as error:
        pytest.fail(f"`{command}` does not parse with today's command line (exit {error.code})")
    pytest.fail(f"`{command}` never parsed its arguments")


def test_the_readme_cites_pages_that_exist():
    missing = [page for page in cited_pages() if not (RESULTS / page).is_file()]
    assert cited_pages() and not missing, missing


@pytest.mark.parametrize("page", cited_pages())
def test_a_cited_page_names_its_commit_and_a_command_that_parses_today(page, monkeypatch, capsys):
    text = head(page)
    assert COMMIT.search(text), f"jobs/results/{page}: no 'commit <hash>' in its first {HEAD_LINES} lines"
    commands = COMMAND.findall(text)
    assert commands, f"jobs/results/{page}: no `hades-ray ...` or `python jobs/X.py ...` in its first lines"
    for command in commands:
        parses(command, monkeypatch)


def test_a_command_that_no_longer_parses_is_caught(monkeypatch, capsys):
    with pytest.raises(pytest.fail.Exception, match="does not parse"):
        parses("hades-ray report --pool P --output O --no-such-flag", monkeypatch)
    with pytest.raises(pytest.fail.Exception, match="does not parse"):
        parses("python jobs/paper_results.py --analyses", monkeypatch)
    assert parses("python jobs/paper_results.py --analyses out/analyses", monkeypatch).analyses == "out/analyses"


def test_a_job_page_names_the_command_that_ran_it(tmp_path, monkeypatch):
    from jobs import bench_common

    monkeypatch.setattr(bench_common, "RESULTS", tmp_path)
    monkeypatch.setattr(sys, "argv", [str(ROOT / "jobs" / "bench_x.py"), "--label", "two words"])
    bench_common.write_results("page", {"figure": 1}, "# A page\n")
    stamp = (tmp_path / "page.md").read_text().splitlines()[2]
    assert stamp.endswith("Command: `python jobs/bench_x.py --label 'two words'`.") and COMMIT.search(stamp)
    assert COMMAND.findall(stamp) == ["python jobs/bench_x.py --label 'two words'"]
    monkeypatch.setattr(sys, "argv", ["pytest"])
    assert bench_common.job_command() is None  # not a job script: the page names no command
