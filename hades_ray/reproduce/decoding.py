"""The decoding study on the paper's grid (§3.2; ``hades-ray reproduce decoding``): greedy, top-k (k = 5, 10,
50) and top-p (p = 0.95, 0.9, 0.8) REPLACE on the same texts (the first ``reproduce.decoding_texts`` demo
leads the perturbation job keeps, masks from the same seed), each ranking ``perturb.rank.num_candidates``
per text and measured by its kept candidates' perplexity, distinct replacements, the artifact rate
(hades_ray/perturb/artifacts.py) and the incoherence proxy (``reproduce/incoherence.py``). Only
``perturb.replace.{decoding,top_k,top_p}`` differ between the runs. Every replacement of every setting
goes to one judging round for people (``reproduce/judging.py``, through hades_ray/annotate/export.py).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np

from hades_ray.config import config_from_dict, recorded_language, set_dotted
from hades_ray.perturb.artifacts import artifact_summary, count_artifacts
from hades_ray.pipeline import storage
from hades_ray.report.inputs import read_pool_rows

log = logging.getLogger(__name__)
EXPERIMENT = "decoding"

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
    config, folder: Path, settings=PAPER_SETTINGS, executor: str = "ray", force: bool = False
) -> dict:
    """Perturb the same ``reproduce.decoding_texts`` leads once per setting under ``config``'s preset and
    models (on Ray, or in-process with ``executor="local"``; ``force`` redoes finished pools), each ranking
    ``perturb.rank.num_candidates`` per text; the measures of each and the judges' export."""
    from hades_ray.perturb.runner import run_perturb
    from hades_ray.pipeline.executor import Executor
    from hades_ray.reproduce.incoherence import IncoherenceProxy
    from hades_ray.reproduce.judging import export_for_judges

    texts, candidates = config.reproduce.decoding_texts, config.perturb.rank.num_candidates
    base = setting_config(config, "greedy", None, candidates)
    doc_ids = study_texts(base, texts, folder / "texts.jsonl")
    proxy = IncoherenceProxy(base.models.causal_lm)
    order = {d: k for k, d in enumerate(doc_ids)}
    rows_by_setting, strategies = {}, []
    for number, (label, decoding, parameter) in enumerate(settings, 1):
        log.info("decoding study: setting %d/%d, %s, on %d texts", number, len(settings), label, texts)
        setting = setting_config(config, decoding, parameter, candidates)
        pool = folder / folder_name(label)
        runner = Executor.of(setting.ray, executor, force)
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
        log.info("decoding study: %s: kept ppl median %.1f, distinct %d/%d, artifact rate %s, incoherent %d (%.3f)",
                 label, row["kept_ppl_median"], row["distinct_replacements"], row["replacements"],
                 row["artifact_rate"], row["incoherent"], row["incoherence_rate"])  # fmt: skip
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


def decoding_markdown(d: dict) -> list[str]:
    """The decoding study's table (decoding.md, and the analyses page of jobs/results/)."""
    from hades_ray.markdown import pipe_table
    from hades_ray.report.model import fmt

    reused = ", pools of an earlier run reused" if any(s.get("pool_reused") for s in d["strategies"]) else ""
    columns = ["setting", "kept ppl (median)", "distinct / replacements", "artifact rate", "incoherent", "share"]
    columns += ["share > ln 10", "share > ln 1000", "median jump (nats)", "texts with one"]
    rows = [
        [s["label"], f"{s['kept_ppl_median']:.1f}", f"{s['distinct_replacements']} / {s['replacements']}"]
        + [fmt(s["artifact_rate"]), s["incoherent"], fmt(s["incoherence_rate"]), fmt(s["incoherence_rate_ln10"])]
        + [fmt(s["incoherence_rate_ln1000"]), fmt(s["surprisal_jump_median"]), s["texts_with_incoherent"]]
        for s in d["strategies"]
    ]
    seconds = f", {d['seconds']:.0f} s" if "seconds" in d else ""
    lines = [f"## Decoding study ({d['documents']} texts, the same for every setting, {d['candidates']} candidates, "
             f"seed {d['seed']}{seconds}{reused})", "",
             f"Incoherent: {d['proxy']['definition']} (LM `{d['proxy']['lm']}`; hades_ray/reproduce/incoherence.py "
             "says why).", "",
             *pipe_table(columns, rows)]  # fmt: skip
    j = d["judging"]
    return lines + ["", f"For judges: {j['items']} items ({j['export']}, `{Path(j['files'][0]).name}`), "
                    f"imported with `{j['import']}`; `key.jsonl` maps items to settings."]  # fmt: skip


def write_outputs(results: dict, folder: Path, stem: str = EXPERIMENT) -> list[Path]:
    """``stem``.json, .md (the table) and .png (a bar chart per measure) under ``folder``."""
    from hades_ray.report.sweeps import decoding_figure

    storage.write_json_atomic(folder / f"{stem}.json", results)
    storage.write(folder / f"{stem}.md", "\n".join(decoding_markdown(results)) + "\n")
    storage.write(folder / f"{stem}.png", decoding_figure(results["strategies"]))
    return [folder / f"{stem}.{ext}" for ext in ("json", "md", "png")]
