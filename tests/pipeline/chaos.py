"""The fault campaign (tests/pipeline/test_chaos.py keeps a seeded slice of it; ``make chaos`` runs it
whole through jobs/chaos.py): runs of the perturbation job (micro models, shards of 2 rows), each with
faults drawn from a seed and injected at a moment drawn from it too, then rerun until it finishes; then
the output is audited against a fault-free run of the same input:

- every input row accounted for exactly once (kept, too short or quarantined), none lost, none twice;
- every kept row the same as in the fault-free run (none corrupted);
- no part without its marker read as finished, nothing half-written (every part and marker parses,
  no temporary files), and a run that could not go on ended with one line saying why.

Fault kinds: ``store`` (the object store answers 500 / 503 / SlowDown or resets connections for a few
requests: retried by the clients, the run goes on), ``store_outage`` (the same for longer than every
retry: the run stops with one line, the rerun finishes), ``disk_full`` (the output on a tmpfs too small
for it: one line naming the full disk, then the tmpfs grown and the job rerun), ``driver_kill`` (the
driver killed by SIGKILL, then rerun), ``worker_kill`` and ``actor_kill`` (a Ray task worker or a stage
actor's process killed by SIGKILL mid-run).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

KINDS = ("store", "store_outage", "disk_full", "driver_kill", "worker_kill", "actor_kill", "node_removal")
SETTINGS = ["--set", "perturb.rank.num_candidates=2", "--set", "perturb.read.shard_size=2"]
BAD_ROWS = ["{broken json", json.dumps({"id": "empty", "text": "   "}), json.dumps({"id": "no-text"})]
ERROR_PREFIX = "hades-ray perturb: error: "


PLACES = ("Aldham", "Brinton", "Corvale", "Dunmere", "Eskby", "Farrow", "Glenisle")
TEMPLATE = (
    "{p} is a market town in the north of the county. It lies on the river {r}, about twelve miles from "
    "the coast. The town grew around a wool market in the fourteenth century. Its parish church was "
    "rebuilt in {y} after a fire destroyed the nave. The railway reached {p} in 1862 and brought new "
    "mills to the valley. Today the town is known for its bridge, its library and a yearly folk festival."
)


def write_input(path: Path, leads: int = 7) -> int:
    """English leads (written for the campaign: six sentences each, so they are kept), one too short,
    and rows that must be quarantined, in one JSONL file; returns its row count."""
    texts = [TEMPLATE.format(p=p, r=["Wend", "Ouse", "Lark", "Tees"][k % 4], y=1700 + 13 * k)
             for k, p in enumerate(PLACES[:leads])]  # fmt: skip
    rows = [json.dumps({"id": f"lead-{k}", "title": PLACES[k], "text": t}) for k, t in enumerate(texts)]
    rows = [*rows[:3], BAD_ROWS[0], *rows[3:], json.dumps({"id": "short", "text": "A short line."}), *BAD_ROWS[1:]]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return len(rows)


def args(source: str, output: str, executor: str = "local") -> list[str]:
    return ["perturb", "--input", source, "--output", output, "--executor", executor, *SETTINGS]


def run_in_process(argv: list[str]) -> tuple[int, str]:
    """(exit code, stderr) of ``hades-ray ARGV`` in this process; an exception escaping the CLI is code -1
    with its type, the traceback a user would have seen."""
    from hades_ray.cli import main

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            code = main(argv)
    except Exception as error:  # recorded as a failure of the campaign: never a user's experience
        return -1, f"{err.getvalue()}Traceback: {type(error).__name__}: {error}"
    return code, err.getvalue()


def error_line(code: int, stderr: str) -> str:
    """The one line a failed run ended with; '' when it finished. A traceback is never one line."""
    if code == 0:
        return ""
    lines = [line for line in stderr.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if "Traceback" in stderr or not last.startswith(ERROR_PREFIX):
        return f"NOT ONE LINE: {last[:200]}"
    return last


# The audit ------------------------------------------------------------------------------------------


def pool_rows(output: str) -> list[dict]:
    """The kept rows of every finished shard, read as readers do: a part only with its marker."""
    from hades_ray.pipeline import storage
    from hades_ray.pipeline.shards import part_name, read_markers

    rows = []
    for index in sorted(read_markers(output)):
        rows += storage.read_parquet(storage.join(output, "pool", f"{part_name(index)}.parquet")).to_pylist()
    return rows


def same_row(row: dict) -> tuple:
    """What must not change under faults (the job is deterministic: seed, text and config decide it)."""
    return row["doc_id"], row["perturbed"], json.dumps(row["spans"]), row["candidate"]


def audit(output: str, rows: int, reference: dict[str, tuple]) -> dict:
    """The campaign's checks of a finished output (module docstring); every count should be 0."""
    from hades_ray.pipeline import storage
    from hades_ray.pipeline.shards import part_name, read_markers

    markers = read_markers(output)
    counts = Counter()
    for marker in markers.values():
        counts.update(marker.get("counts", {}))
    kept = pool_rows(output)
    ids = Counter(r["doc_id"] for r in kept)
    accounted = counts["kept"] + counts["too_short"] + counts["no_maskable_words"] + counts["quarantined"]
    quarantine = 0
    half_written = 0
    for index in markers:
        text = storage.read_text(storage.join(output, "quarantine", f"{part_name(index)}.jsonl"))
        try:
            quarantine += sum(1 for line in text.splitlines() if json.loads(line))
        except ValueError:
            half_written += 1
    listed = [p for folder in ("pool", "instances", "quarantine") for p in storage.list_files(f"{output}/{folder}")]
    unmarked = sum(1 for p in listed if int(p.rsplit("part-", 1)[1].split(".")[0]) not in markers)
    if storage.is_local(output):
        half_written += sum(1 for p in Path(output).rglob(".*") if p.is_file() and ".tmp" in p.name)
    summary = json.loads(storage.read_text(f"{output}/summary.json"))
    return {
        "rows": rows,
        "read": counts["read"],
        "lost": max(0, rows - counts["read"]) + sum(1 for d in reference if d not in ids),
        "duplicated": max(0, counts["read"] - rows) + sum(n - 1 for n in ids.values()),
        "corrupted": sum(1 for r in kept if r["doc_id"] in reference and same_row(r) != reference[r["doc_id"]])
        + sum(1 for r in kept if r["doc_id"] not in reference),
        "unaccounted": rows - accounted,
        "quarantine_mismatch": abs(quarantine - counts["quarantined"]),
        "unmarked_parts": unmarked,
        "half_written": half_written,
        "summary_read": summary["read"] - rows,
    }


# Faults ---------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    kind: str
    seed: int
    faults: Counter = field(default_factory=Counter)
    reruns: int = 0
    errors: list[str] = field(default_factory=list)  # the one line each stopped run ended with
    store_retries: int = 0
    audit: dict = field(default_factory=dict)
    note: str = ""
    output: str = ""

    def row(self) -> dict:
        return {"kind": self.kind, "seed": self.seed, "faults": dict(self.faults), "reruns": self.reruns,
                "errors": self.errors, "store_retries": self.store_retries, "audit": self.audit,
                "note": self.note}  # fmt: skip


def until_finished(argv: list[str], outcome: Outcome, before_rerun=None, reruns: int = 3) -> None:
    """Rerun in this process until the job finishes (at most ``reruns`` times), noting each stop's line."""
    for _ in range(reruns):
        if before_rerun:
            before_rerun()
        code, stderr = run_in_process(argv)
        if code == 0:
            return
        outcome.errors.append(error_line(code, stderr))
        outcome.reruns += 1
    raise AssertionError(f"{outcome.kind} seed {outcome.seed}: no rerun finished: {outcome.errors}")


def store_faults(source: str, output_prefix: str, upstream_port: int, seed: int, outage: bool) -> Outcome:
    """The output on S3 behind the fault proxy; faults scheduled by request count from the seed."""
    from hades_ray.pipeline import s3
    from tests.pipeline.fault_proxy import KINDS as STORE_KINDS
    from tests.pipeline.fault_proxy import FaultProxy
    from tests.pipeline.s3_local import s3_env

    rng = random.Random(seed)
    outcome = Outcome("store_outage" if outage else "store", seed)
    output = f"{output_prefix}/{outcome.kind}-{seed}"
    saved = {k: os.environ.get(k) for k in s3_env(0)}
    retries_before = s3.retries()
    with FaultProxy(upstream_port) as proxy:
        os.environ.update(s3_env(proxy.port))
        try:
            if outage:  # longer than every retry (AWS_MAX_ATTEMPTS in a row): the run cannot go on
                proxy.fail(rng.choice(["503", "slowdown", "500"]), 400, after=rng.randrange(5, 60))
            else:
                for _ in range(rng.randint(2, 4)):
                    proxy.fail(rng.choice(STORE_KINDS), rng.randint(1, 3), after=rng.randrange(0, 40))
            code, stderr = run_in_process(args(source, output))
            if code:
                outcome.errors.append(error_line(code, stderr))
                outcome.reruns += 1
            proxy.clear()
            outcome.faults = Counter({f"store_{k}": n for k, n in proxy.injected.items()})
            if code:
                until_finished(args(source, output), outcome)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    outcome.store_retries = s3.retries() - retries_before + sum(proxy.injected.values())
    outcome.output = output
    return outcome


@contextlib.contextmanager
def small_disk(folder: Path, size_kib: int):
    """A tmpfs of ``size_kib`` at ``folder`` (root only); ``grow()`` on the yielded object makes it ample."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(folder)], check=True,
                   capture_output=True)  # fmt: skip

    class Disk:
        @staticmethod
        def grow() -> None:
            subprocess.run(["mount", "-o", "remount,size=65536k", str(folder)], check=True, capture_output=True)

    try:
        yield Disk
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False, capture_output=True)


def can_mount() -> bool:
    return os.geteuid() == 0 and Path("/proc/filesystems").read_text().find("tmpfs") >= 0


def disk_full(source: str, folder: Path, seed: int, check) -> Outcome:
    """The output on a tmpfs that fills up part way (its size drawn from the seed); ``check(output)``
    audits it before the tmpfs goes."""
    outcome = Outcome("disk_full", seed)
    size = random.Random(seed).randrange(48, 160, 4)
    output = str(folder / "out")
    with small_disk(folder, size) as disk:
        code, stderr = run_in_process(args(source, output))
        outcome.faults["disk_full"] = 1
        outcome.note = f"tmpfs of {size} KiB"
        if code == 0:
            outcome.note += ", which the output fitted: no fault"
            outcome.faults.clear()
        else:
            outcome.errors.append(error_line(code, stderr))
            outcome.reruns += 1
            disk.grow()
            until_finished(args(source, output), outcome)
        outcome.output = output
        outcome.audit = check(output)
        return outcome


def driver_kill(source: str, output: str, seed: int, env: dict) -> Outcome:
    """The driver (a process of its own) killed by SIGKILL a drawn moment after its first shard finished."""
    from hades_ray.pipeline import storage

    outcome = Outcome("driver_kill", seed)
    delay = random.Random(seed).uniform(0.0, 4.0)
    command = [str(Path(sys.executable).parent / "hades-ray"), *args(source, output)]
    driver = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              start_new_session=True)  # fmt: skip
    deadline = time.time() + 600
    while driver.poll() is None and time.time() < deadline and not storage.list_files(f"{output}/_markers"):
        time.sleep(0.05)
    time.sleep(delay)
    if driver.poll() is None:
        os.killpg(driver.pid, signal.SIGKILL)
        outcome.faults["driver_kill"] = 1
        outcome.reruns += 1
        outcome.note = f"killed {delay:.1f} s after the first marker"
    else:
        outcome.note = "the driver finished before its kill"
    driver.wait(timeout=60)
    until_finished(args(source, output), outcome)
    outcome.output = output
    return outcome


def ray_processes(root: int, name: str) -> list[int]:
    """Descendants of ``root`` whose command line starts with ``ray::`` and contains ``name``."""
    from jobs.bench_common import descendants

    commands = {}
    for pid in descendants(root):
        with contextlib.suppress(OSError):
            commands[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    return sorted(p for p, command in commands.items() if command.startswith("ray::") and name in command)


PROCESS_NAMES = {"worker_kill": "ReadShard", "actor_kill": "MapWorker"}  # how each victim's process is named


def process_kill(source: str, output: str, seed: int, kinds: tuple[str, ...]) -> Outcome:
    """The job on this process's Ray cluster; for each of ``kinds`` in turn, a task worker's process
    (worker_kill) or a stage actor's (actor_kill) killed by SIGKILL at a drawn moment once one is working
    on the job."""
    outcome = Outcome("+".join(kinds), seed)
    rng = random.Random(seed)
    killed: dict[str, int] = {}

    def killer() -> None:
        deadline = time.time() + 300
        for kind in kinds:
            name = PROCESS_NAMES[kind]
            while time.time() < deadline and kind not in killed:
                if ray_processes(os.getpid(), name):
                    time.sleep(rng.uniform(0.0, 1.5))
                    if targets := ray_processes(os.getpid(), name):
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(rng.choice(targets), signal.SIGKILL)
                            killed[kind] = 1
                        continue
                time.sleep(0.05)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    code, stderr = run_in_process(args(source, output, "ray"))
    thread.join(timeout=5)
    for kind in kinds:
        outcome.faults[kind] = killed.get(kind, 0)
    if missed := [PROCESS_NAMES[k] for k in kinds if k not in killed]:
        outcome.note = f"no {' or '.join(missed)} process was seen before the job ended"
    if code:
        outcome.errors.append(error_line(code, stderr))
        outcome.reruns += 1
        until_finished(args(source, output, "ray"), outcome)
    outcome.output = output
    return outcome


def node_removal(source: str, output: str, seed: int, env: dict) -> Outcome:
    """The job on a two-node ``ray.cluster_utils.Cluster`` of its own (a child process:
    tests/cluster/node_removal.py), its worker node removed a drawn moment after it hosts stage actors;
    rerun here until it finishes if the run stopped."""
    outcome = Outcome("node_removal", seed)
    script = Path(__file__).resolve().parents[1] / "cluster" / "node_removal.py"
    done = subprocess.run([sys.executable, str(script), source, output, str(seed)], env=env, capture_output=True,
                          text=True, timeout=900, cwd=Path(__file__).resolve().parents[2])  # fmt: skip
    verdicts = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not verdicts:
        raise AssertionError(f"node_removal seed {seed}: the cluster script failed: {done.stderr[-2000:]}")
    verdict = json.loads(verdicts[-1])
    removed = verdict["job_running_at_removal"] and verdict["actors_seen_on_node"] > 0
    outcome.faults["node_removal"] = int(removed)
    outcome.note = (f"removed with {verdict['actors_on_removed_node']} actors on it, {verdict['markers_at_removal']} "
                    "shards done" if removed else "the job ended before the node was removed")  # fmt: skip
    if verdict["error"] or not verdict["summary"]:
        outcome.errors.append(verdict["error"] or "the job did not finish")
        outcome.reruns += 1
        until_finished(args(source, output), outcome)
    outcome.output = output
    return outcome
