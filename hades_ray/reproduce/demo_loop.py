"""The whole HaDes loop offline (``make demo-loop``, jobs/demo_loop.py): perturb the demo corpus, selection
rounds judged by the SIMULATED panel, then the dataset. A rerun of a work folder resumes it: finished
shards, rounds and judgments are kept."""

from __future__ import annotations

import json
from pathlib import Path

from hades_ray.pipeline import storage
from hades_ray.pipeline.laps import Laps


def simulated_cut(similarity, n_share: float) -> float:
    """The similarity at which the simulated judges call N so that about ``n_share`` of ``similarity`` (the
    pool's, a pandas Series) reads as N (micro models make nonsense replacements that a fixed cut would call
    H every time)."""
    return float(similarity.astype(float).quantile(1 - n_share))


def judged_rounds(config, workdir: Path, rounds: int, noise: float, laps: Laps, say=print, show_round=None,
                  executor=None) -> None:  # fmt: skip
    """Selection rounds 0..``rounds``-1 (a round already selected is kept), each judged by the simulated
    panel of 4 and then 2 more judges where they disagree (flip rate ``noise``); ``say`` gets each round's
    judgments and agreement, ``show_round`` each new round's summary, ``laps`` each step's time."""
    from hades_ray.annotate.export import export_items
    from hades_ray.annotate.simulate import simulate_judgments
    from hades_ray.pool.labels import round_labels
    from hades_ray.pool.layout import existing_rounds
    from hades_ray.select.round import run_round

    done = existing_rounds(workdir)
    for k in range(rounds):
        if k not in done or not (workdir / f"round-{k:03d}" / "round.json").is_file():
            summary = run_round(config, workdir, k, executor=executor)
            (show_round or (lambda _: None))(summary)
        laps.lap(f"round_{k}_select")
        for _attempt in range(2):
            if export_items(config, workdir, k, "csv")["items"]:
                report = simulate_judgments(config, workdir, k, noise=noise)
                say(f"  SIMULATED judges: {report['import']} {report['accepted']} judgments")
        laps.lap(f"round_{k}_judgments")
        say(f"  round {k} agreement (simulated judges): {json.dumps(round_labels(config, workdir, k)[1])}")
        say(f"  elapsed {laps.total():.0f} s")


def demo_loop(config, workdir: Path, docs: int, rounds: int, n_share: float, noise: float, laps: Laps, say=print,
              show_round=None) -> dict:  # fmt: skip
    """Perturb the first ``docs`` demo leads into workdir/pool, cut the simulated judges' similarity at the
    pool's ``1 - n_share`` quantile (0: the configured cut), run ``judged_rounds`` and build workdir/dataset:
    its stats. Each pass's seconds go to ``laps`` and workdir/timings.json."""
    from hades_ray.annotate.dataset import build_dataset
    from hades_ray.perturb.runner import run_perturb
    from hades_ray.pool.feature_job import compute_features

    run_perturb(config, "demo", workdir / "pool", limit=docs)  # finished shards are skipped
    laps.lap("pool")
    say(f"pool ready after {laps.total():.0f} s")
    similarity = compute_features(config, workdir, columns=["similarity"])["similarity"]
    laps.lap("features")
    if n_share > 0:
        config.annotate.simulate_similarity = simulated_cut(similarity, n_share)
        say(f"SIMULATED judges call N at similarity >= {config.annotate.simulate_similarity:.3f} "
            f"(the pool's {1 - n_share:.0%} quantile)")  # fmt: skip
    judged_rounds(config, workdir, rounds, noise, laps, say, show_round)
    stats = build_dataset(config, workdir, workdir / "dataset")
    laps.lap("dataset")
    splits = ", ".join(f"{s}={v['instances']}" for s, v in stats["splits"].items())
    say(f"dataset: {stats['instances']} instances ({stats['H']} H, {stats['N']} N), splits {splits} -> "
        f"{workdir / 'dataset'}")  # fmt: skip
    say(f"demo loop finished in {laps.total():.0f} s (judgments SIMULATED)")
    say("seconds per pass: " + ", ".join(f"{name} {seconds:.0f}" for name, seconds in laps.laps.items()))
    storage.write(workdir / "timings.json", json.dumps(laps.laps, indent=2) + "\n")
    return stats
