"""The fault campaign (``make chaos``): K seeded runs of the perturbation job with the micro models, each
with one kind of fault injected at a moment drawn from its seed (tests/pipeline/chaos.py says which and
what is checked), every run audited against a fault-free run of the same input; and the output lock's
race: C drivers started at one instant on one S3 output, T times over. One moto server on 127.0.0.1
and one local Ray cluster serve the whole campaign. The table goes to jobs/results/chaos.{json,md}.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jobs.bench_common import job_command, offline_env, options, page, scratch, write_results  # noqa: E402

ZERO = ("lost", "duplicated", "corrupted", "unaccounted", "quarantine_mismatch", "unmarked_parts", "half_written")


def race(contenders: int, trials: int) -> dict:
    from tests.pipeline.lock_race import race as run_race

    trials_reports = run_race("s3://hades/chaos-lock-race", contenders, trials, {})
    winners = [sum(r["got"] for r in trial) for trial in trials_reports]
    named = all(
        f"pid {next(r['pid'] for r in trial if r['got'])} on " in r["error"]
        for trial in trials_reports
        if sum(r["got"] for r in trial) == 1
        for r in trial
        if not r["got"]
    )
    return {"contenders": contenders, "trials": trials, "trials_with_one_holder": winners.count(1),
            "most_holders_at_once": max(winners), "refusals_name_the_holder": named}  # fmt: skip


def campaign(kinds: list[str], runs_per_kind: int, seed: int, work: Path, s3_port: int) -> list[dict]:
    from tests.pipeline import chaos

    source = work / "leads.jsonl"
    rows = chaos.write_input(source)
    code, stderr = chaos.run_in_process(chaos.args(str(source), str(work / "reference")))
    assert code == 0, stderr[-3000:]
    reference = {r["doc_id"]: chaos.same_row(r) for r in chaos.pool_rows(str(work / "reference"))}
    results = []
    for k, kind in enumerate(kinds):
        for j in range(runs_per_kind):
            case_seed = seed + 100 * k + j
            out = work / f"{kind}-{case_seed}"
            print(f"chaos: {kind} seed {case_seed}", flush=True)
            env = offline_env(PYTHONUNBUFFERED="1")
            try:
                if kind == "disk_full" and not chaos.can_mount():
                    results.append({"kind": kind, "seed": case_seed, "note": "skipped: mounting a tmpfs needs root"})
                    continue
                if kind in ("store", "store_outage"):
                    outcome = chaos.store_faults(
                        str(source), "s3://hades/chaos", s3_port, case_seed, kind == "store_outage"
                    )
                elif kind == "disk_full":
                    outcome = chaos.disk_full(str(source), out, case_seed, lambda o: chaos.audit(o, rows, reference))
                elif kind in ("driver_kill", "node_removal"):
                    outcome = getattr(chaos, kind)(str(source), str(out), case_seed, env)
                else:
                    outcome = chaos.process_kill(str(source), str(out), case_seed, (kind,))
                if kind != "disk_full":
                    outcome.audit = chaos.audit(outcome.output, rows, reference)
                results.append(outcome.row())
            except AssertionError as error:  # a run no rerun could finish: a finding, recorded
                results.append({"kind": kind, "seed": case_seed, "note": f"FAILED: {error}"[:500]})
            print(f"chaos: {results[-1]}", flush=True)
    return results


COLUMNS = ["fault kind", "runs", "faults injected", "reruns", "stops (one line each)", "store retries", "lost"]
COLUMNS += ["duplicated", "corrupted", "unmarked", "half", "notes"]


def markdown(report: dict) -> str:
    from hades_ray.markdown import pipe_table

    r, table = report["race"], []
    for kind in report["kinds"]:
        runs = [x for x in report["results"] if x["kind"] == kind]
        audited = [x for x in runs if x.get("audit")]
        faults = sum((Counter(x.get("faults", {})) for x in runs), Counter())
        total = {key: sum(x["audit"].get(key, 0) for x in audited) for key in ZERO}
        notes = "; ".join(sorted({x["note"] for x in runs if x.get("note")}))[:300]
        injected = ", ".join(f"{k} {v}" for k, v in sorted(faults.items())) or "0"
        table.append([kind, f"{len(audited)} of {len(runs)}", injected, sum(x.get("reruns", 0) for x in runs)])
        table[-1] += [sum(len(x.get("errors", [])) for x in runs), sum(x.get("store_retries", 0) for x in runs)]
        table[-1] += [total[key] for key in ("lost", "duplicated", "corrupted", "unmarked_parts", "half_written")]
        table[-1].append(notes)
    errors = sorted({e for x in report["results"] for e in x.get("errors", [])})
    return page(
        "# Fault campaign: the perturbation job under faults, audited",
        f"`{report['command']}`: {report['runs']} runs of {report['rows']} input rows (shards of 2 rows, micro\n"
        "models), each with one kind of fault at a seeded moment, rerun until it finished, then audited against\n"
        "a fault-free run of the same input (tests/pipeline/chaos.py). Lost, duplicated and corrupted count rows;\n"
        "'unmarked' counts parts without a marker, 'half' half-written files; 'stops' the one-line errors.",
        pipe_table(COLUMNS, table, align="lrlrrrrrrrrl"),
        "The lines the stopped runs ended with:",
        [f"- `{e}`" for e in errors] or None,
        f"Lock race: {r['contenders']} drivers taking one S3 output's lock at one instant, {r['trials']} times: "
        f"{r['trials_with_one_holder']} of {r['trials']} had exactly one holder (most at once: "
        f"{r['most_holders_at_once']}); the refused named the holder: {r['refusals_name_the_holder']}.",
    )


def main() -> None:
    from tests.pipeline import chaos

    flags = {"--runs-per-kind": (3, "seeded runs of each fault kind")}
    flags |= {
        "--kinds": (",".join(chaos.KINDS), "fault kinds, comma-separated"),
        "--seed": (1000, "the first run's seed"),
    }
    flags |= {"--race-contenders": (8, "drivers in each lock race"), "--race-trials": (20, "lock races")}
    args = options(__doc__.split("\n\n")[0], flags)
    kinds = [k for k in args.kinds.split(",") if k]
    work = scratch("hades_chaos_")
    from hades_ray.models.micro import build_micro_kit
    from tests.pipeline.s3_local import moto_server, s3_env

    build_micro_kit(work / "home")
    os.environ.update(offline_env(HADES_RAY_HOME=str(work / "home"), RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0"))
    with moto_server() as port:
        os.environ.update(s3_env(port))
        if {"worker_kill", "actor_kill"} & set(kinds):
            from hades_ray.ray_runtime import init_ray

            init_ray(num_cpus=2)
        results = campaign(kinds, args.runs_per_kind, args.seed, work, port)
        lock_race = race(args.race_contenders, args.race_trials)
    report = {"command": job_command(), "runs": len(results), "rows": chaos.write_input(work / "count.jsonl")}
    report |= {"kinds": kinds, "race": lock_race, "results": results}
    write_results("chaos", report, markdown(report))
    from hades_ray.pipeline import storage

    storage.delete(work)  # the campaign's scratch outputs, not results


if __name__ == "__main__":
    main()
