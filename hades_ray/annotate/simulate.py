"""A SIMULATED judge panel for offline demos and tests; never a substitute for people.

Each simulated judge reads the original and the replacement: the same lemmas, or an encoder
similarity of at least ``annotate.simulate_similarity`` (the stored feature; no model runs), means
N, anything else H; then it flips its answer with its own noise rate (around ``--noise``). Seeded.
Every output says so: ``import-NNN.simulated.csv``, ``simulated: true`` and the judge ids ``sim-NN``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hades_ray.annotate.judgments import import_locked, next_import_number
from hades_ray.pipeline.lock import OutputLock
from hades_ray.pool.consensus import item_table
from hades_ray.pool.feature_job import compute_features
from hades_ray.pool.layout import round_dir
from hades_ray.pool.rounds import batch_items, load_judgments


def simulated_truth(features: pd.DataFrame, similarity_cut: float) -> pd.Series:
    """'N' where the replacement keeps the original's lemmas or is close to it in the encoder, else 'H'."""
    same = features["orig_lemma"].astype(str).str.lower() == features["repl_lemma"].astype(str).str.lower()
    close = features["similarity"].astype(float) >= similarity_cut
    return pd.Series(np.where(same | close, "N", "H"), index=features["id"].astype(str))


def judge_noise(n_judges: int, noise: float, seed: int) -> np.ndarray:
    """Each simulated judge's own flip rate: ``noise`` times a seeded factor in [0.5, 1.5], at most 0.5."""
    return np.clip(noise * np.random.default_rng(seed).uniform(0.5, 1.5, size=n_judges), 0.0, 0.5)


def simulate_rows(
    truth: pd.Series,
    table: pd.DataFrame,
    judged: pd.DataFrame,
    n_judges: int,
    noise: float,
    seed: int,
    round_index: int,
    import_number: int,
) -> list[dict]:
    """One judgment per missing vote: the first panel judges who have not judged the item yet."""
    rates = judge_noise(n_judges, noise, seed + round_index)
    rng = np.random.default_rng([seed, round_index, import_number])
    used = judged.groupby("item_id")["judge_id"].apply(set).to_dict() if len(judged) else {}
    rows = []
    for item_id, needed in zip(table["item_id"], table["needed"]):
        free = [j for j in range(n_judges) if f"sim-{j + 1:02d}" not in used.get(item_id, set())]
        for j in free[: int(needed)]:
            label = truth[item_id]
            if rng.random() < rates[j]:
                label = "N" if label == "H" else "H"
            rows.append(
                {
                    "item_id": item_id,
                    "judge_id": f"sim-{j + 1:02d}",
                    "label": label,
                    "where": f"simulated judge {j + 1}",
                }
            )
    return rows


def simulate_judgments(
    config, workdir, round_index: int, judges: int | None = None, noise: float | None = None
) -> dict:
    """Ask the simulated panel for every judgment the next export would request; store it as an import."""
    cfg = config.annotate
    if judges:  # the first panel's size; the consensus rule scales with it (see pool/consensus.py)
        cfg.judges, cfg.max_judges = judges, max(cfg.max_judges, judges)
        cfg.validate()
    noise = cfg.simulate_noise if noise is None else noise
    n_judges = cfg.max_judges
    batch_ids = [str(i["id"]) for i in batch_items(workdir, round_index)]  # only the batch's features are read
    truth = simulated_truth(compute_features(config, workdir, ids=batch_ids), cfg.simulate_similarity)
    # Under the round's lock, so the import number that seeds the panel is the one the import gets.
    with OutputLock(round_dir(workdir, round_index), wait=True):
        items = [str(i["id"]) for i in batch_items(workdir, round_index)]
        judged = load_judgments(workdir, round_index)
        table = item_table(items, judged, cfg)
        number = next_import_number(round_dir(workdir, round_index) / "judgments")
        rows = simulate_rows(truth, table, judged, n_judges, noise, config.seed, round_index, number)
        report = import_locked(workdir, round_index, "simulated-panel", simulated=True, rows=rows)
    return {**report, "judges": n_judges, "noise": noise}
