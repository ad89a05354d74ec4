"""One selection round (paper Sec. 3.2): score, filter, rebalance and sample the next batch for judges.

Round 0 samples the pool at random. Round K >= 1 trains a detector on the consensus judgments of the
rounds before it (holding a share out to estimate its TPR alpha, TNR beta and precision gamma),
stores p(H) of every unjudged instance as data, and then only reads stored scores: p(H) thresholds,
the paraphrase cut, the Date->Date / Name->Name drop, Eq. 1 rebalancing and the batch sample. The
model-free filters (paraphrases, obvious swaps) apply in every round, round 0 included.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd

from hades_ray.config import save_config
from hades_ray.io.hades_format import mark_span
from hades_ray.select import filters
from hades_ray.select.detector import score_with_detector
from hades_ray.select.features import compute_features
from hades_ray.select.ratio import explain_ratio
from hades_ray.select.workdir import (
    existing_rounds,
    load_pool,
    original_words,
    pool_documents,
    round_dir,
    set_pool,
    write_json_atomic,
    write_parquet_atomic,
)

log = logging.getLogger(__name__)


def assigned_ids(workdir: Path, before: int) -> set[str]:
    """Ids of every instance put in a batch by a round before ``before`` (judged or not)."""
    ids: set[str] = set()
    for k in range(before):
        path = round_dir(workdir, k) / "batch.jsonl"
        ids |= {json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}
    return ids


def hades_record(row, label: int = -1) -> dict:
    return {
        "replaced": mark_span(list(row["words"]), row["start"], row["end"]),
        "replaced_ids": [int(row["start"]), int(row["end"])],
        "hallucination": int(label),
        "id": row["id"],
        "doc_id": row["doc_id"],
        "original_span": row["original_span"],
        "replacement": row["replacement"],
    }


def display_original(row, documents: dict) -> tuple[str, int, int]:
    """The original text judges see, and the original span's char offsets in it.

    The document's own original text where the pool's spans locate this replacement; else the
    instance's words with its span put back."""
    doc = documents.get(row["doc_id"])
    if doc:
        for span in doc["spans"]:
            if span.get("original") == row["original_span"] and span.get("replacement") == row["replacement"]:
                return doc["original"], int(span["orig_start"]), int(span["orig_end"])
    words = original_words(row)
    before = " ".join(words[: row["start"]])
    start = len(before) + (1 if before else 0)
    return " ".join(words), start, start + len(str(row["original_span"]))


def write_batch(batch: pd.DataFrame, workdir: Path, path: Path) -> None:
    documents = pool_documents(workdir)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for _, row in batch.iterrows():
            text, start, end = display_original(row, documents)
            record = {**hades_record(row), "original_text": text, "original_start": start, "original_end": end}
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    tmp.replace(path)


def run_round(config, workdir: str | Path, round_index: int, pool: str | Path | None = None) -> dict:
    """Select round ``round_index``'s batch; writes batch.jsonl, candidates.parquet and round.json."""
    workdir = Path(workdir)
    if pool:
        set_pool(workdir, pool)
    out = round_dir(workdir, round_index)
    if (out / "round.json").is_file():
        raise FileExistsError(
            f"round {round_index} was already selected ({out / 'round.json'}); "
            "rounds are never overwritten: start the next round or a new work directory"
        )
    missing = [k for k in range(round_index) if k not in existing_rounds(workdir)]
    if missing:
        raise FileNotFoundError(f"round {round_index} needs rounds {missing} first")
    sel = config.select
    size = sel.round_size(round_index)
    seed = config.seed * 1_000_003 + round_index
    pool_frame = load_pool(workdir)
    features = compute_features(config, workdir)
    taken = assigned_ids(workdir, round_index)
    cand = pool_frame[~pool_frame["id"].isin(taken)].merge(features.drop(columns="doc_id"), on="id")
    counts = {"pool": len(pool_frame), "assigned_before": len(taken), "unjudged": len(cand)}
    summary: dict = {"round": round_index, "batch_size_target": size, "counts": counts, "messages": []}
    out.mkdir(parents=True, exist_ok=True)

    scored = score_with_detector(config, workdir, round_index, cand, out, summary) if round_index else None
    if scored is not None:
        cand = cand.merge(scored, on="id", how="left")
        low, high = sel.p_low, sel.p_high
        if low < 0 or high < 0:
            target = sel.candidate_target or 3 * size
            found = filters.find_thresholds(cand["p_hallucination"].values, target)
            low, high = (found[0] if low < 0 else low), (found[1] if high < 0 else high)
            summary["thresholds_found_for_target"] = target
        summary["thresholds"] = {"p_low": low, "p_high": high}
        cand["keep_threshold"] = filters.threshold_keep(cand["p_hallucination"].values, low, high)
    else:
        cand["keep_threshold"] = True
    counts["after_thresholds"] = int(cand["keep_threshold"].sum())
    cand["keep_paraphrase"] = filters.paraphrase_keep(cand["similarity"].values, sel.paraphrase_threshold)
    alive = cand["keep_threshold"] & cand["keep_paraphrase"]
    counts["after_paraphrase"] = int(alive.sum())
    cand["obvious_swap"] = filters.obvious_swaps(cand, sel.swap_entity_types)
    cand["keep_swap"] = True
    cand.loc[alive, "keep_swap"] = filters.swap_keep(cand[alive], sel.swap_entity_types, sel.date_name_drop_share, seed)
    alive &= cand["keep_swap"]
    counts["obvious_swaps"] = int((cand["obvious_swap"] & (cand["keep_threshold"] & cand["keep_paraphrase"])).sum())
    counts["after_swaps"] = int(alive.sum())

    cand["keep_rebalance"] = True
    if scored is not None and "rates" in summary:
        rates = summary["rates"]
        ratio = explain_ratio(rates["alpha"], rates["beta"], rates["gamma"])
        summary["ratio"] = {"R": ratio.value, "raw": ratio.raw, "message": ratio.message}
        if ratio.message:
            summary["messages"].append(ratio.message)
            log.warning(ratio.message)
        cand.loc[alive, "keep_rebalance"] = filters.rebalance_keep(cand.loc[alive, "pred"].values, ratio.value, seed)
        counts["predicted_h_before_rebalance"] = int((alive & (cand["pred"] == 1)).sum())
        alive &= cand["keep_rebalance"]
        counts["predicted_h_after_rebalance"] = int((alive & (cand["pred"] == 1)).sum())
    counts["after_rebalance"] = int(alive.sum())
    chosen = set(filters.sample_batch(cand.loc[alive, "id"].values, size, seed))
    cand["in_batch"] = cand["id"].isin(chosen)
    counts["batch"] = len(chosen)
    if len(chosen) < size:
        summary["messages"].append(f"only {len(chosen)} candidates left for a batch of {size}")

    write_parquet_atomic(cand.drop(columns=["words"]), out / "candidates.parquet")
    write_batch(cand[cand["in_batch"]], workdir, out / "batch.jsonl")
    save_config(config, out)
    write_json_atomic(out / "round.json", summary)  # last: its presence marks the round as selected
    return summary
