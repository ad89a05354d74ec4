"""What the benchmarks share: their paths, the offline environment, the model kit, memory and time
measures, child processes that report figures, and the results files under jobs/results/."""

from __future__ import annotations

import argparse
import atexit
import json
import os
import resource
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "jobs" / "results"
ENWIKI = ROOT.parent / "shared" / "data" / "enwiki2015_first_paragraphs.jsonl"
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
_SCRATCH = ExitStack()  # the run's temporary folders, removed when it exits
atexit.register(_SCRATCH.close)
# Names whose homes are in the package, imported on first use (a child of an older worktree imports this
# module, and must not import this checkout's hades_ray): name -> module.
HOMES = dict.fromkeys(
    ("rss_mib", "descendants", "tree_rss_mib", "Sampler", "ForwardClock", "measured"), "pipeline.meters"
)
HOMES |= {"adam_epochs": "train.loop", "machine_facts": "plan.machine"}
HOMES |= dict.fromkeys(("spec_table", "cell", "page"), "markdown")  # a results page's tables and blocks


def __getattr__(name: str):
    if name not in HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"hades_ray.{HOMES[name]}"), name)


def scratch(prefix: str) -> Path:
    """A temporary folder for the rest of this run (``storage.scratch_folder``), removed at its exit."""
    from hades_ray.pipeline import storage

    return _SCRATCH.enter_context(storage.scratch_folder(prefix))


def offline_env(**extra: str) -> dict:
    """This process's environment for a child that must not reach the hub, with ``extra`` on top."""
    return {**os.environ, **OFFLINE, "TRANSFORMERS_VERBOSITY": "error", **extra}


def kit_or_micro(home: Path | None = None) -> bool:
    """True when the offline kit's MLM and GPT-2 are built; else the micro random-weight models are
    built into ``home`` (a temporary folder by default; kept when already there) and used from here on."""
    from hades_ray.models.registry import ModelNotFoundError, resolve_model

    try:
        resolve_model("local:mlm"), resolve_model("local:gpt2")
        return True
    except ModelNotFoundError:
        from hades_ray.models.micro import build_micro_kit

        home = home or scratch("hades_bench_home_")
        if not (home / "models" / "mlm" / "config.json").is_file():
            build_micro_kit(home)
        os.environ["HADES_RAY_HOME"] = str(home)
        return False


def texts_file(texts: list[str], path: Path) -> Path:
    """``texts`` as the JSONL input ``hades-ray score`` reads (ids ``lead-K``), written at ``path``."""
    from hades_ray.pipeline import storage

    storage.write(path, "".join(json.dumps({"id": f"lead-{k}", "text": t}) + "\n" for k, t in enumerate(texts)))
    return path


def peak_rss_mib() -> float:
    """This process's peak resident memory so far (``ru_maxrss``, KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def print_result(result: dict) -> None:
    """A child's figures, as the one line ``child_result`` reads."""
    print("RESULT " + json.dumps(result), flush=True)


def child_result(command: list[str], **run) -> dict:
    """Run a child process that ends with ``print_result``; its figures (``run``: ``subprocess.run``'s
    arguments: env, cwd, timeout, ...)."""
    done = subprocess.run(command, capture_output=True, text=True, check=False, **run)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode or not lines:
        raise RuntimeError(f"{' '.join(command[1:])}: exit {done.returncode}\n{done.stderr[-3000:]}")
    return json.loads(lines[-1].removeprefix("RESULT "))


# A job's function run in a fresh process: jobs/ from this checkout (bench_common imports no hades_ray), then
# off the path again, so that hades_ray comes from the code root the child runs in (its cwd and PYTHONPATH).
_CALL = """import json, runpy, sys
root, script, name, args = sys.argv[1:]
sys.path.insert(0, root); import jobs.bench_common as common; sys.path.remove(root)
common.print_result(runpy.run_path(script)[name](*json.loads(args)))"""


def child_command(function, *args) -> list[str]:
    """The command that runs ``function(*args)`` (a module-level function of a job; JSON arguments) in a
    fresh process and prints its figures for ``child_result``."""
    script = sys.modules[function.__module__].__file__
    return [sys.executable, "-c", _CALL, str(ROOT), str(Path(script).resolve()), function.__name__, json.dumps(args)]


def in_child(function, *args, code: Path | str = ROOT, env: dict | None = None, **run) -> dict:
    """``function(*args)`` in a fresh process (its peak memory its own) with the hades_ray of ``code`` (this
    checkout, or a worktree of an older commit): what it returns (``run``: ``subprocess.run``'s arguments)."""
    env = {**(env or offline_env()), "PYTHONPATH": str(code)}
    return child_result(child_command(function, *args), env=env, cwd=str(code), **run)


def worktree(commit: str) -> Path:
    """A git worktree of ``commit`` under the temporary folder (made once): the code a before arm runs."""
    folder = Path(os.environ.get("TMPDIR") or "/tmp") / f"hades_ray_at_{commit[:12]}"
    if not (folder / "hades_ray").is_dir():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(folder), commit], check=True)
    return folder


def score_cli(detector: str, data: Path, out: Path) -> dict:
    """One ``hades-ray score --executor local`` process over ``data`` (no Ray start-up: the fastest way to run
    the job on a small machine): its texts, wall seconds end to end, the job's own (its summary) and the
    peak memory of this process's children so far."""
    command = [sys.executable, "-m", "hades_ray.cli", "score", "--model", detector, "--input", str(data)]
    command += ["--output", str(out), "--executor", "local"]
    began = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=offline_env(PYTHONPATH=str(ROOT)))
    wall = time.perf_counter() - began
    summary = json.loads((out / "summary.json").read_text())
    job = (summary.get("timings") or {}).get("wall_seconds") or summary.get("wall_seconds")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"texts": summary["scored_texts"], "wall_s": round(wall, 2), "job_s": job, "peak_rss_mib": round(peak, 1)}


def machine_words(report: dict) -> str:
    """The machine a report ran on, in words (its cores where it recorded no facts)."""
    from hades_ray.plan.machine import describe_machine

    return describe_machine(report["machine"]) if "machine" in report else f"{os.cpu_count()} cores, CPU only"


def git(*args: str, root: Path | str = ROOT) -> str:
    """``git -C root ARGS``'s output, stripped; empty where it fails (not a checkout)."""
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def made_at() -> str:
    """The commit this checkout's code is at, for a results page to name ("abc1234", with "+ uncommitted
    changes" where the tracked files differ from it): a page must say which code made it."""
    commit = git("rev-parse", "--short", "HEAD") or "unknown (not a git checkout)"
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return commit + (" + uncommitted changes" if dirty else "")


def job_command() -> str | None:
    """The command line that ran this process when it is a job script (``python jobs/X.py ...``), else None."""
    import shlex

    script = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    if script is None or script.suffix != ".py" or script.parent != ROOT / "jobs":
        return None
    return shlex.join(["python", f"jobs/{script.name}", *sys.argv[1:]])


def write_results(name: str, report, markdown: str | None = None) -> None:
    """jobs/results/NAME.json and, with ``markdown``, NAME.md, which is also printed. Both name the commit
    the code was at (``made_at``) and, run as a job script, the command that ran it (``job_command``):
    the JSON as ``made_at`` and ``command``, the page in a line under its title."""
    from hades_ray.pipeline import storage

    commit, command = made_at(), job_command()
    if isinstance(report, dict):
        report = {"made_at": commit, **({"command": command} if command else {}), **report}
    storage.write(RESULTS / f"{name}.json", json.dumps(report, indent=2, default=str) + "\n")
    if markdown is not None:
        stamp = f"Made at commit `{commit}`." + (f" Command: `{command}`." if command else "")
        title, sep, rest = markdown.partition("\n")
        markdown = f"{title}\n\n{stamp}\n{sep}{rest}" if title.startswith("# ") else f"{stamp}\n\n{markdown}"
        storage.write(RESULTS / f"{name}.md", markdown)
        print(markdown)


class _Help(argparse.RawDescriptionHelpFormatter):
    """A job's description as written, and a flag's default after its help (unless none, off or named there)."""

    def _get_help_string(self, action) -> str:
        unset = action.default in (None, argparse.SUPPRESS, []) or action.default is False
        return action.help + ("" if unset or "default" in action.help else " (default: %(default)s)")


def options(doc: str, flags: dict, argv=None) -> argparse.Namespace:
    """A job's arguments: ``doc`` its ``--help`` description (as written), ``flags`` "--name" -> (default, help)
    or (default, help, more ``add_argument`` keywords); ``--help`` shows each default. The type is the
    default's: False is a switch, a list takes one or more values of its items' type, None a string."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=_Help)
    for name, (default, text, *more) in flags.items():
        kind = {"default": default, "help": text}
        if default is False:
            kind["action"] = "store_true"
        elif isinstance(default, list) and default:
            kind |= {"nargs": "+", "type": type(default[0])}
        elif not isinstance(default, list):
            kind["type"] = str if default is None else type(default)
        parser.add_argument(name, **(kind | (more[0] if more else {})))
    return parser.parse_args(argv)


def versus(label: str, before, after, fmt: str = "") -> list:
    """A before/after row: ``label``, both figures formatted with ``fmt``, and after / before (``"1.23x"``)."""
    return [label, format(before, fmt), format(after, fmt), f"{after / before:.2f}x"]
