"""Build the report: each section from the inputs given, in the issue's order, then the three files."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from hades_ray.report.inputs import ReportInputError, parse_detector_arg, read_yaml_config, require_dir
from hades_ray.report.model import Section

log = logging.getLogger(__name__)
MAX_DOCS = 20_000  # pool documents read for distributions and learnability labels (counts cover all)
TITLE = "hades_ray report"
SPLITS = ("train", "valid", "test")


def _features(pool, dataset, seed: int, limit: int, max_docs: int | None) -> Section | None:
    from hades_ray.config import default_config
    from hades_ray.models.registry import ModelNotFoundError, resolve_model
    from hades_ray.report.features import features_section
    from hades_ray.report.labelled import labelled_instances

    instances, source = labelled_instances(pool, dataset, seed, limit, max_docs)
    if len({i.label for i in instances}) < 2:
        return None
    resolved = pool / "config.resolved.yaml" if pool is not None else None
    # The pool's resolved config (its MLM made the replacements), else the defaults.
    config = read_yaml_config(resolved) if resolved and resolved.is_file() else default_config()
    try:
        mlm = resolve_model(config.models.mlm)
    except (ModelNotFoundError, ValueError) as error:
        log.warning("features by label without the MLM: %s", error)
        mlm = None
    from hades_ray.config import recorded_language
    from hades_ray.text.languages import DEFAULT_LANGUAGE
    from hades_ray.report.paper_text import read_tags

    language = recorded_language(pool) if pool is not None else DEFAULT_LANGUAGE  # a dataset alone: as a bare folder
    return features_section(instances, source, mlm, config.detect, read_tags(dataset), language)


def _detectors(values: list[str], dataset: Path | None, split: str, min_round: int, seed: int) -> Section | None:
    from hades_ray.report.detectors import detectors_section, eval_instances, from_detector, from_predictions

    if not values:
        return None
    named = [parse_detector_arg(v) for v in values]
    if len({name for name, _ in named}) < len(named):
        raise ReportInputError("--detector: two detectors have the same name; give them as NAME=PATH")
    folders = [(name, path) for name, path in named if path.is_dir()]
    source = "their prediction files"
    instances = []
    if folders:
        if dataset is None:
            raise ReportInputError(f"--detector {folders[0][1]}: a detector folder is scored on --dataset's split")
        files = [dataset / f"{s}.txt" for s in (SPLITS if split == "all" else (split,))]
        instances = eval_instances(files, min_round)
        source = f"{', '.join(f.name for f in files)} of {dataset}" + (f", rounds >= {min_round}" if min_round else "")
    scored = [from_detector(n, p, instances) if p.is_dir() else from_predictions(n, p) for n, p in named]
    return detectors_section(scored, source, seed)


def build_report(
    output: str | Path,
    pool: str | Path | None = None,
    workdir: str | Path | None = None,
    dataset: str | Path | None = None,
    detectors: list[str] | None = None,
    analyses: str | Path | None = None,
    seed: int = 0,
    feature_limit: int = 300,
    split: str = "test",
    min_round: int = 0,
    max_docs: int | None = MAX_DOCS,
    tables: str | Path | None = None,
) -> dict:
    """Write ``output``/report.html, report.md, report.json; returns their paths and the section keys."""
    from hades_ray.report.pool import pool_section
    from hades_ray.report.render import write_pages
    from hades_ray.report.reproduce import reproduce_section
    from hades_ray.report.rounds import pos_ner_section, rounds_section
    from hades_ray.report.sweeps import context_section, decoding_section, read_analyses

    began = time.perf_counter()
    pool = require_dir(pool, "--pool", "run `hades-ray perturb` first") if pool else None
    workdir = require_dir(workdir, "--workdir", "run `hades-ray round` (or make demo-loop) first") if workdir else None
    dataset = require_dir(dataset, "--dataset", "run `hades-ray dataset build` first") if dataset else None
    analyses = Path(analyses) if analyses else None
    analyses_data = read_analyses(analyses) if analyses else None  # a bad file fails before any model runs
    for value in detectors or []:
        parse_detector_arg(value)
    steps = [
        ("pool", lambda: pool_section(pool, max_docs) if pool else None),
        ("features", lambda: _features(pool, dataset, seed, feature_limit, max_docs)),
        ("pos_ner", lambda: pos_ner_section(dataset) if dataset and (dataset / "stats.json").is_file() else None),
        ("rounds", lambda: rounds_section(workdir) if workdir else None),
        ("detectors", lambda: _detectors(detectors or [], dataset, split, min_round, seed)),
        ("reproduce", lambda: reproduce_section(tables) if tables else None),
    ]
    sections: list[Section] = []
    for name, make in steps:
        started = time.perf_counter()
        section = make()
        if section is not None:
            sections.append(section)
            log.info("section %s: %.1f s", name, time.perf_counter() - started)
    for key, make in (("context_length", context_section), ("decoding", decoding_section)):
        if analyses_data and analyses_data.get(key):
            sections.append(make(analyses_data[key], analyses))
    if workdir is not None or detectors:
        from hades_ray.report.paper import paper_section

        metrics = next((s.numbers["metrics"] for s in sections if s.key == "detectors"), {})
        sections.append(paper_section(workdir, dataset, detectors or [], metrics))
    if not sections:
        raise ReportInputError("nothing to report: give --pool, --workdir, --dataset, --detector, --analyses, --tables")
    inputs = {"pool": pool, "workdir": workdir, "dataset": dataset, "detectors": ", ".join(detectors or []),
              "analyses": analyses, "tables": tables}  # fmt: skip
    paths = write_pages(Path(output), TITLE, sections, {k: str(v) for k, v in inputs.items() if v})
    log.info("report written in %.1f s", time.perf_counter() - began)
    return {"paths": paths, "sections": [s.key for s in sections]}
