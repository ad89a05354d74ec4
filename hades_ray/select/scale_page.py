"""jobs/bench_scale_select.py's derived figures and page: rounds 0 and 1 on synthetic pools of two sizes (new
data path) and, at the smallest, the old one: wall time, driver peak RSS, and the scoring and selection passes."""

from __future__ import annotations

from hades_ray.markdown import pipe_table

ROUNDS = ("round_0", "round_1")


def scale_ratios(results: dict) -> dict:
    """The new data path's driver RSS and wall time at its largest pool over its smallest, per round."""
    new = results["new"]
    sizes = sorted(new, key=int)
    if len(sizes) < 2:
        return {}
    small, large, span = new[sizes[0]], new[sizes[-1]], f"{int(sizes[-1]):,} / {int(sizes[0]):,}"
    out = {}
    for r in ROUNDS:
        out[f"new {r} driver RSS, {span}"] = round(large[r]["driver_peak_rss_mib"] / small[r]["driver_peak_rss_mib"], 2)
        out[f"new {r} wall, {span}"] = round(large[r]["wall_s"] / small[r]["wall_s"], 2)
    return out


def scale_notes(results: dict) -> list[str]:
    """Derived figures: what the old path holds per instance, and the per-row cost of the scaling passes."""
    new, lines = results["new"], []
    for size, rounds in results.get("old", {}).items():
        for r in ROUNDS if size in new else ():
            extra = rounds[r]["driver_peak_rss_mib"] - new[size][r]["driver_peak_rss_mib"]
            per = extra * 1024 / int(size)
            lines.append(
                f"old {r} holds {extra} MiB more in the driver at {int(size):,} instances (~{per:.1f} KiB per "
                f"instance: ~{per * 1e6 / 1024**2:.1f} GiB at 1,000,000 and ~{per * 5e6 / 1024**2:.0f} GiB at "
                "5,000,000 if it grew the same way)"
            )
    sizes = sorted(new, key=int)
    for phase in ("scores_s", "selection_pass_s") if len(sizes) >= 2 else ():
        a = new[sizes[0]]["round_1"].get("timings", {}).get(phase)
        b = new[sizes[-1]]["round_1"].get("timings", {}).get(phase)
        if a is not None and b is not None:
            per_row = (b - a) / (int(sizes[-1]) - int(sizes[0])) * 1e6
            lines.append(f"round 1 {phase[:-2]}: {per_row:.0f} us per extra pool instance")
    return lines


def scale_page(results: dict, old_commit: str) -> str:
    """The page's table of every round, the command that reproduces it, the ratios and the notes."""
    rows = []
    for label, runs in (("new", results["new"]), (f"old ({old_commit})", results.get("old", {}))):
        for size, rounds in runs.items():
            for name, r in rounds.items():
                t, size_ = r.get("timings", {}), f"{int(size):,}"
                rows.append([label, size_, name[-1], r["wall_s"], r["driver_peak_rss_mib"], r["counts"]["batch"]])
                rows[-1] += [t.get("scores_s", "-") if name == "round_1" else "-", t.get("selection_pass_s", "-")]
    columns = ["data path", "pool instances", "round", "wall (s)", "driver peak RSS (MiB)", "batch"]
    lines = pipe_table([*columns, "scoring pass (s)", "selection pass (s)"], rows)
    lines += ["", f"Reproduce: `{results['command']}` (micro detector, features stored in advance; 2 CPU cores)."]
    lines += [f"- {key}: {value}" for key, value in results.get("ratios", {}).items()]
    return "\n".join(lines + [f"- {note}" for note in results.get("notes", [])])
