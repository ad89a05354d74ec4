"""The decoding study on the paper's grid: greedy, top-k (k = 5, 10, 50) and top-p (p = 0.95, 0.9, 0.8)
REPLACE on the same texts (the first ``texts`` demo leads the perturbation job keeps, masks from the same
seed), each measured by its kept candidates' perplexity, distinct replacements, the artifact rate
(hades_ray/perturb/artifacts.py) and the incoherence proxy (jobs/incoherence.py). Only
``perturb.replace.{decoding,top_k,top_p}`` differ between the runs. Every replacement of every setting
goes to one judging round for people (jobs/decoding_judging.py, through hades_ray/annotate/export.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from hades_ray.config import config_from_dict, recorded_language, set_dotted
from hades_ray.perturb.artifacts import artifact_summary, count_artifacts
from hades_ray.pipeline import storage
from hades_ray.report.inputs import read_pool_rows

# (label, decoding, the override that sets its parameter): the paper's seven settings.
PAPER_SETTINGS = (
    ("greedy", "greedy", None),
    ("top-k 5", "top_k", "perturb.replace.top_k=5"),
    ("top-k 10", "top_k", "perturb.replace.top_k=10"),
    ("top-k 50", "top_k", "perturb.replace.top_k=50"),
    ("top-p 0.95", "top_p", "perturb.replace.top_p=0.95"),
    ("top-p 0.9", "top_p", "perturb.replace.top_p=0.9"),
    ("top-p 0.8", "top_p", "perturb.replace.top_p=0.8"),
)
POOL_COLUMNS = ["doc_id", "original", "perturbed", "ppl", "spans"]


def folder_name(label: str) -> str:
    return label.replace(" ", "_").replace(".", "")


def study_texts(config, count: int, path: Path) -> list[str]:
    """The first ``count`` demo leads (input order) that the perturbation job keeps under ``config``
    (read checks, >= min_sentences, maskable words: its own prepare step), written to ``path`` as JSONL.
    Every setting perturbs this file, so all see the same texts with the same document ids."""
    from hades_ray.io.readers import plan_shards, read_shard
    from hades_ray.models.registry import load_tokenizer
    from hades_ray.perturb.steps import prepare_rows
    from hades_ray.text.pipeline import load_pipeline

    rows = [r for shard in plan_shards("demo", 1_000_000) for r in read_shard(shard).to_pylist()]
    rows.sort(key=lambda r: r["row"])  # read_shard orders by length; the study takes leads in input order
    nlp, tokenizer = load_pipeline(config.language, config.spacy_model), load_tokenizer(config.models.mlm)
    kept: list[dict] = []
    for begin in range(0, len(rows), 2 * count):  # most demo leads are too short: prepare a chunk at a time
        chunk = [dict(r) for r in rows[begin : begin + 2 * count]]
        kept += [r for r in prepare_rows(chunk, nlp, tokenizer, config) if r["status"] == "ok"]
        if len(kept) >= count:
            break
    if len(kept) < count:
        raise ValueError(f"only {len(kept)} demo leads can be perturbed; ask for at most that many texts")
    records = [{"id": r["doc_id"], "title": r["title"], "text": r["text"]} for r in kept[:count]]
    storage.write(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return [r["id"] for r in records]


def setting_config(config, decoding: str, parameter: str | None, candidates: int):
    """The study's ``config`` (its preset, config file and overrides) with one decoding setting."""
    setting = config_from_dict(config.to_dict())
    for assignment in [f"perturb.replace.decoding={decoding}", f"perturb.rank.num_candidates={candidates}"]:
        set_dotted(setting, assignment)
    if parameter:
        set_dotted(setting, parameter)
    return config_from_dict(setting.to_dict())  # validated, like every config built


def pool_measures(rows: list[dict], language) -> dict:
    """Kept-candidate perplexity, distinct replacements and the artifact rate of one setting's texts."""
    replacements = [s["replacement"].strip().lower() for r in rows for s in r["spans"] or []]
    ppl = np.array([r["ppl"] for r in rows], dtype=float)
    return {
        "documents": len(rows),
        "kept_ppl_median": float(np.median(ppl)) if ppl.size else None,
        "kept_ppl_mean": float(ppl.mean()) if ppl.size else None,
        "replacements": len(replacements),
        "distinct_replacements": len(set(replacements)),
        "distinct_share": len(set(replacements)) / len(replacements) if replacements else None,
        "artifact_rate": artifact_summary(count_artifacts(rows, language), language)["rate"],
    }


def run_decoding_sweep(
    config, folder: Path, texts: int, candidates: int = 0, settings=PAPER_SETTINGS, executor: str = "ray"
) -> dict:
    """Perturb the same ``texts`` leads once per setting under ``config``'s preset and models (on Ray, or
    in-process with ``executor="local"``), each ranking ``candidates`` per text (0: the config's
    ``perturb.rank.num_candidates``, the pipeline's 20); the measures of each and the judges' export."""
    from hades_ray.perturb.runner import run_perturb
    from hades_ray.pipeline.executor import Executor
    from jobs.decoding_judging import export_for_judges
    from jobs.incoherence import IncoherenceProxy

    candidates = candidates or config.perturb.rank.num_candidates
    base = setting_config(config, "greedy", None, candidates)
    doc_ids = study_texts(base, texts, folder / "texts.jsonl")
    proxy = IncoherenceProxy(base.models.causal_lm)
    order = {d: k for k, d in enumerate(doc_ids)}
    rows_by_setting, strategies = {}, []
    for label, decoding, parameter in settings:
        setting = setting_config(config, decoding, parameter, candidates)
        pool = folder / folder_name(label)
        runner = Executor.of(setting.ray, executor)
        summary = run_perturb(setting, folder / "texts.jsonl", pool, executor=runner)  # a finished pool is reused
        rows = [r for r in read_pool_rows(pool, POOL_COLUMNS) if r["doc_id"] in order]
        rows.sort(key=lambda r: order[r["doc_id"]])
        spans = proxy.measure(rows)
        row = {
            "label": label,
            "decoding": decoding,
            "settings": (parameter or "argmax").removeprefix("perturb.replace."),
        }
        row |= pool_measures(rows, recorded_language(pool)) | proxy.summary(spans)
        row |= {"pool_reused": summary["shards"]["processed_now"] == 0}
        print(f"  {label}: kept ppl median {row['kept_ppl_median']:.1f}, distinct {row['distinct_replacements']}"
              f"/{row['replacements']}, artifact rate {row['artifact_rate']}, incoherent {row['incoherent']}"
              f" ({row['incoherence_rate']:.3f})", flush=True)  # fmt: skip
        rows_by_setting[label] = (pool, rows, spans)
        strategies.append(row)
    judging = export_for_judges(base, folder / "judging", rows_by_setting)
    return {
        "texts": texts,
        "documents": strategies[0]["documents"],
        "doc_ids": doc_ids,
        "candidates": candidates,
        "preset": base.preset,
        "seed": base.seed,
        "proxy": proxy.description(),
        "strategies": strategies,
        "judging": judging,
    }
