"""The strict check for a refactor: every golden job run at a base revision and at the working tree, on
this machine, and their outputs compared byte for byte (``make golden-diff BASE=<rev>``).

    python -m tests.golden.diff --base REV [--job NAME ...] [--keep DIR]

The base runs in a git worktree with its own code (``PYTHONPATH`` points there, Ray's workers included)
and its own ``tests/golden/jobs.py``; a base older than that file runs the working tree's job list on
its own code. Both sides build their micro models the same way, so the comparison covers the models
too. What legitimately differs between two runs is left out, as in the content check
(tests/golden/content.py): marker folders, locks, Ray Train's run folder, time keys of JSON files, and
the absolute paths of the two runs. Exit 0 when every file of every job is the same, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.golden.content import normalized_bytes, output_files

ROOT = Path(__file__).resolve().parents[2]
JOBS_MODULE = Path("tests/golden/jobs.py")


def _run_jobs(checkout: Path, output: Path, jobs: list[str]) -> None:
    """The golden jobs of ``checkout`` on its own code; their log goes to ``output.log``, a line per job
    to the console."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONHASHSEED": "0"}
    command = [sys.executable, "-u", "-m", "tests.golden.jobs", "--output", str(output)]
    command += [arg for job in jobs for arg in ("--job", job)]
    log = output.with_suffix(".log")
    print(f"running the golden jobs of {checkout} (log: {log})", flush=True)
    with log.open("w") as sink:
        process = subprocess.Popen(
            command, cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        for line in process.stdout:
            sink.write(line)
            if line.startswith("golden job "):
                print(f"  {line.strip()}", flush=True)
        code = process.wait()
    if code != 0:
        tail = "".join(log.read_text().splitlines(keepends=True)[-20:])
        raise SystemExit(f"{tail}golden-diff: the golden jobs failed in {checkout} (exit {code}); the log: {log}")


def _base_checkout(base: str, where: Path) -> Path:
    checkout = where / "base"
    added = subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(checkout), base],
        capture_output=True,
        text=True,
    )
    if added.returncode != 0:
        raise SystemExit(
            f"golden-diff: cannot check out {base!r}: {added.stderr.strip()} (give a commit, branch or tag)"
        )
    if not (checkout / JOBS_MODULE).is_file():
        print(
            f"{base} has no {JOBS_MODULE}: running the working tree's job list on {base}'s code (it may call "
            "what that code lacks)",
            flush=True,
        )
        for name in ("__init__.py", "content.py", "jobs.py"):
            shutil.copy2(ROOT / JOBS_MODULE.parent / name, checkout / JOBS_MODULE.parent / name)
    return checkout


def _normalized(output: Path, job: str) -> dict[str, bytes]:
    paths = json.loads((output / "golden_paths.json").read_text())
    folder = output / job
    paths = {**paths, str(folder): "<OUT>"}
    skip = ("pool",) if job.startswith("select_round") else ()
    return {f.as_posix(): normalized_bytes(folder / f, paths) for f in output_files(folder, skip)}


def compare(base_out: Path, head_out: Path, jobs: list[str]) -> list[str]:
    """One line per job: the same, or the files that differ, are missing or are new."""
    lines, differing = [], 0
    for job in jobs:
        before, after = _normalized(base_out, job), _normalized(head_out, job)
        changed = [f for f in sorted(before) if f in after and before[f] != after[f]]
        missing, new = sorted(set(before) - set(after)), sorted(set(after) - set(before))
        if not (changed or missing or new):
            lines.append(f"  same     {job} ({len(before)} files)")
            continue
        differing += 1
        lines.append(f"  DIFFERS  {job}: {len(changed)} changed, {len(missing)} missing, {len(new)} new")
        lines += [f"             changed: {f}" for f in changed] + [f"             missing: {f}" for f in missing]
        lines += [f"             new:     {f}" for f in new]
    lines.append(f"{len(jobs) - differing} of {len(jobs)} jobs byte-identical")
    return lines


def main(argv: list[str] | None = None) -> int:
    from tests.golden.jobs import JOBS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], prog="python -m tests.golden.diff")
    parser.add_argument("--base", required=True, help="the revision to compare with (a commit, branch or tag)")
    parser.add_argument("--job", action="append", choices=list(JOBS), help="compare only this job (repeatable)")
    parser.add_argument("--keep", type=Path, help="keep both runs' outputs in this folder instead of a temporary one")
    args = parser.parse_args(argv)
    jobs = args.job or list(JOBS)
    where = Path(args.keep or tempfile.mkdtemp(prefix="golden-diff-")).resolve()
    where.mkdir(parents=True, exist_ok=True)
    checkout = _base_checkout(args.base, where)
    keep = bool(args.keep)
    try:
        _run_jobs(checkout, where / "base-out", jobs)
        _run_jobs(ROOT, where / "head-out", jobs)
        lines = compare(where / "base-out", where / "head-out", jobs)
    except SystemExit:
        keep = True  # the failed side's log stays for reading
        raise
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(checkout)], check=False)
        if not keep:
            shutil.rmtree(where, ignore_errors=True)
    print(f"golden-diff {args.base} -> working tree:")
    print("\n".join(lines))
    return 0 if lines[-1].startswith(f"{len(jobs)} of") else 1


if __name__ == "__main__":
    sys.exit(main())
