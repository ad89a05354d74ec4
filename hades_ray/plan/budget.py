"""From the sample's counts and the stages' throughput to a corpus's device-hours, wall time and the
REPLACE/RANK actor split.

The sample's work per document scales linearly to the corpus: the counts are exact for the sample,
so the plan is as good as the sample is like the corpus. The wall time assumes the devices stay busy
(the job streams shards through actor pools that live for the whole run, hades_ray/pipeline/executor.py)
and leaves out model loading and actor start-up, seconds per actor.
"""

from __future__ import annotations

from dataclasses import dataclass

from hades_ray.plan.count import SampleCounts


@dataclass
class Throughput:
    """Tokens per second of one device (a GPU, or a CPU core) in each model stage, and their source."""

    mlm_tokens_per_s: float
    lm_tokens_per_s: float
    prepare_docs_per_s: float  # MASK's spaCy and tokenizer, one CPU core
    source: str  # "measured: ..." or "given"
    device_kind: str  # "GPU" or "CPU core"


def balance(replace_seconds: float, rank_seconds: float, actors_per_device: int) -> dict:
    """REPLACE and RANK actors per device in proportion to their work (at least one of each)."""
    share = replace_seconds / (replace_seconds + rank_seconds)
    replace_actors = min(actors_per_device - 1, max(1, round(share * actors_per_device)))
    return {
        "replace_share_of_work": round(share, 4),
        "replace_actors_per_device": replace_actors,
        "rank_actors_per_device": actors_per_device - replace_actors,
    }


def make_plan(
    counts: SampleCounts,
    throughput: Throughput,
    devices: int,
    corpus_docs: int | None = None,
    perturbed_docs: int | None = None,
    actors_per_device: int = 4,
    kept_share: float | None = None,
) -> dict:
    """The plan for a corpus of ``corpus_docs`` read (or ``perturbed_docs`` perturbed) documents; the
    work per perturbed document is the sample's."""
    if not counts.perturbed:
        raise ValueError("no document of the sample passes the filters; a plan needs at least one")
    # One of read and perturbed documents is given, the other follows through the share of documents
    # that pass the filters (the sample's, unless ``kept_share`` is known better).
    kept_share = kept_share or counts.perturbed / counts.read
    if perturbed_docs is not None:
        read, perturbed = perturbed_docs / kept_share, float(perturbed_docs)
    else:
        read, perturbed = float(corpus_docs), corpus_docs * kept_share
    per_doc = perturbed / counts.perturbed
    work = {
        "mlm_token_forwards": counts.mlm_token_forwards_done * per_doc,
        "mlm_forward_calls": counts.mlm_forward_calls * per_doc,
        "lm_token_forwards": counts.lm_token_forwards_done * per_doc,
        "lm_forward_calls": counts.lm_forward_calls * per_doc,
        "spacy_tokens": counts.spacy_tokens / counts.read * read,
    }
    replace_s = work["mlm_token_forwards"] / throughput.mlm_tokens_per_s
    rank_s = work["lm_token_forwards"] / throughput.lm_tokens_per_s
    device_hours = (replace_s + rank_s) / 3600
    dominant = "REPLACE" if replace_s >= rank_s else "RANK"
    return {
        "documents_read": round(read),
        "documents_perturbed": round(perturbed),
        "candidates": round(perturbed * counts.candidates / counts.perturbed),
        "work": {key: round(value) for key, value in work.items()},
        "device_kind": throughput.device_kind,
        "replace_device_hours": round(replace_s / 3600, 2),
        "rank_device_hours": round(rank_s / 3600, 2),
        "rank_shared_prefix": rank_shared_prefix(counts, per_doc, throughput.lm_tokens_per_s),
        "device_hours": round(device_hours, 2),
        "devices": devices,
        "wall_hours": round(device_hours / devices, 2),
        "dominant_stage": dominant,
        "kept_share": round(perturbed / read, 4),
        "prepare_cpu_core_hours": round(read / throughput.prepare_docs_per_s / 3600, 2),
        "balance": balance(replace_s, rank_s, actors_per_device),
    }


def needed_throughput(plan: dict, device_hours: float) -> dict:
    """The tokens/s each stage would need for the whole plan to fit ``device_hours`` with the
    stages' current shares of the time."""
    share = plan["balance"]["replace_share_of_work"]
    seconds = device_hours * 3600
    return {
        "device_hours": device_hours,
        "mlm_tokens_per_s": round(plan["work"]["mlm_token_forwards"] / (seconds * share)),
        "lm_tokens_per_s": round(plan["work"]["lm_token_forwards"] / (seconds * (1 - share))),
    }


def rank_shared_prefix(counts: SampleCounts, per_doc: float, lm_tokens_per_s: float) -> dict:
    """RANK with every candidate whole (before) and with each document's shared prefix once (after),
    at the same tokens/s: a remainder's token is counted as costing what a whole candidate's does
    (jobs/bench_rank.py measures the seconds of both)."""
    sides = {}
    for side, kind in (("without", "whole"), ("with", "shared")):
        forwards = getattr(counts, f"lm_token_forwards_{kind}") * per_doc
        sides[side] = {
            "lm_token_forwards": round(forwards),
            "device_hours": round(forwards / lm_tokens_per_s / 3600, 2),
        }
    whole = max(counts.lm_token_forwards_whole, 1)
    return {
        "prefix_tokens_per_document": round(counts.lm_prefix_tokens / counts.perturbed, 1),
        **sides,
        "ratio": round(counts.lm_token_forwards_shared / whole, 3),
    }


def flops_per_token(layers: int, width: int, context: float, head: int = 0) -> float:
    """Forward FLOPs per token of a transformer: 2 x the layers' weights (12 width^2 each), the attention
    over ``context`` tokens (4 x context x width per layer), and a vocabulary head of ``head`` rows where
    every position needs it (GPT-2 in RANK; REPLACE's head runs at one position)."""
    return 2 * layers * 12 * width**2 + 4 * layers * context * width + 2 * width * head


def corpus_plans(
    sample: dict, throughput: dict, pool: int, corpus: tuple[str, int], shares: dict[str, float], aim_hours: float
) -> list[dict]:
    """Plans at one throughput from a sample's counts (``SampleCounts.to_dict``): a pool of ``pool`` perturbed
    documents (with the throughput that fits it in ``aim_hours``), then a corpus ``(name, documents)`` at
    each share of documents passing the filters in ``shares`` (its name -> the share)."""
    counts, speed = SampleCounts(**sample), Throughput(**throughput)
    plan = make_plan(counts, speed, 1, perturbed_docs=pool)
    rows = [{"corpus": f"paper's pool, {pool / 1e6:g}M segments", **plan, "to_fit": needed_throughput(plan, aim_hours)}]
    for name, share in shares.items():
        plan = make_plan(counts, speed, 1, corpus_docs=corpus[1], kept_share=share)
        rows.append({"corpus": f"{corpus[0]}, pass share of {name}", **plan})
    return rows
