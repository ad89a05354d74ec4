"""The score job: shards of the input (or the one in-memory shard of ``--text`` or stdin), the target
and score stages, the shard writer, the settings digest (the detector's identity and every setting a
shard's output depends on, the threshold included) and the summary's layout; ``report.html`` is drawn
from the merged ``scores.jsonl`` afterwards, on request.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json

import pyarrow as pa

from hades_ray.config import RESOLVED_NAME, HadesConfig, resolve_language, resolved_yaml
from hades_ray.detect.detector import Detector
from hades_ray.pipeline import storage
from hades_ray.pipeline.executor import Executor
from hades_ray.pipeline.job import ShardJob
from hades_ray.pipeline.shards import Shard
from hades_ray.score.inputs import memory_input, plan_inputs, read_texts
from hades_ray.score.settings import ScoreConfig
from hades_ray.score.stages import score_stages, text_pipeline
from hades_ray.score.writer import write_shard
from hades_ray.text.languages import AUTO, DEFAULT_LANGUAGE, Language, language_from_path, language_of

HTML_TEXTS = 200  # texts shown in report.html (the most suspicious words are taken over all of them)
COUNTS = ("rows", "scored_texts", "quarantined", "scored_words", "flagged")


def settings_digest(detector: Detector, settings: ScoreConfig, threshold: float, text: dict | None = None) -> str:
    """The digest of what a shard's output depends on; ``text``: ``text_settings`` of a non-English run
    (English digests keep the values they had before languages came)."""
    key = [detector.identity(), settings.mode, settings.words, threshold, settings.max_chars, settings.stride]
    return hashlib.sha256(json.dumps(key + ([text] if text else [])).encode()).hexdigest()


def detector_language(detector: Detector) -> Language:
    """The language a detector trained on (its saved settings' ``language``; older detectors: English)."""
    return language_of(detector.meta)


def text_language(config: HadesConfig, detector: Language, input: str | None, given: str | None) -> str:
    """The name of the language of the texts a detector reads (``score``, ``serve``, ``generate``), for
    ``resolve_language``: ``given`` (``--language``) when given, else the config's, except that the default
    (``DEFAULT_LANGUAGE``) yields to the language the detector trained on (``detector``; no detector: the
    default's); ``auto``: the language the input path names, else the detector's."""
    name = given or config.language
    if name == AUTO:
        return language_from_path(str(input or "")) or detector.name
    return detector.name if name == DEFAULT_LANGUAGE.name and not given else name


def language_config(config: HadesConfig, detector: Detector, input: str | None = None, given: str | None = None):
    """``config`` resolved for the texts' language (``text_language``): that language's overrides applied."""
    name = text_language(config, detector_language(detector), input, given)
    return resolve_language(dataclasses.replace(config, language=name), input)


def in_memory(input: str | None, text: str | None) -> bool:
    """``--text`` and stdin are scored from memory (in-process unless ``--executor`` says otherwise)."""
    return text is not None or input == "-"


def score_job(
    config: HadesConfig,
    detector: Detector,
    output: str,
    threshold: float,
    header: dict,
    input: str | None,
    text: str | None,
) -> ShardJob:
    """Scoring ``text``, or the texts of ``input`` ("-": stdin lines), with ``detector``."""
    s = config.score
    if in_memory(input, text):
        shard, table = memory_input(text, s.max_chars)
        plan, read = (lambda mapper: [shard]), functools.partial(_memory_rows, table)
    else:
        plan = functools.partial(plan_inputs, input, s.shard_size)
        read = functools.partial(read_texts, max_chars=s.max_chars)
    return ShardJob(
        name="score",
        output=output,
        digest=settings_digest(detector, s, threshold, _text_settings(config)),
        plan=plan,
        read=read,
        stages=functools.partial(score_stages, detector.located(), s.mode, s.words, config, s.num_gpus, s.stride),
        write=functools.partial(write_shard, output=output, threshold=threshold, language=config.lang),
        summarize=functools.partial(summarize, header),
        views=("scores", "quarantine"),
        resolved={RESOLVED_NAME: resolved_yaml(config)},
        rows_verb="texts",
    )


def _text_settings(config: HadesConfig) -> dict | None:
    from hades_ray.text.pipeline import text_settings

    return None if config.lang.is_default else text_settings(config)  # English digests: as before languages


def _memory_rows(table: pa.Table, shard: Shard) -> pa.Table:
    return table


def run_score(
    config: HadesConfig,
    model: str,
    output: str,
    input: str | None = None,
    text: str | None = None,
    executor: Executor | None = None,
    language: str | None = None,
) -> dict:
    """Score ``text``, or the texts of ``input`` (a file, folder or URI; "-" for stdin lines), with the
    detector folder ``model`` into ``output`` under the ``score`` section; returns the summary.
    Without ``executor``: in-process for one text and stdin, on Ray per the config for files.
    ``language`` (``--language``): the texts' language, over the config's and the detector's."""
    detector = Detector.open(model)  # a missing or broken detector fails here, before any worker starts
    config = language_config(config, detector, input, language)
    settings = config.score
    text_pipeline(config.lang, settings.words, config.spacy_model)  # what is missing fails before any worker
    mode = detector.scoring_mode(settings.mode)
    threshold = settings.threshold if settings.threshold is not None else detector.threshold
    executor = executor or Executor.of(config.ray, "auto", in_memory=in_memory(input, text))
    header = {
        "detector": str(model),
        "mode": mode,
        "words": settings.words,
        "threshold": threshold,
        "threshold_from": "--threshold" if settings.threshold is not None else "detector",
        "executor": executor.kind,
    }
    header |= config.lang.record_fields()  # English summaries keep the fields they had before languages came
    summary = executor.run(score_job(config, detector, str(output), threshold, header, input, text))
    if settings.html:
        write_html(str(output), threshold, summary["scored_texts"])
    return summary


def summarize(header: dict, merged: dict) -> dict:
    """``summary.json``'s fields from the shards' merged stats (the executor adds shards and timings)."""
    counts = merged.get("counts", {})
    words = counts.get("scored_words", 0)
    return {
        **header,
        **{k: counts.get(k, 0) for k in COUNTS},
        "quarantine_reasons": dict(sorted(merged.get("reasons", {}).items())),
        "mean_p": merged.get("p_sum", 0.0) / words if words else None,
        "flagged_share": counts.get("flagged", 0) / words if words else None,
    }


def write_html(output: str, threshold: float, total: int) -> None:
    """``report.html`` from ``scores.jsonl``: the first texts in full, the most suspicious words of all."""
    from hades_ray.score.html import most_suspicious, write_report

    scores = storage.join(output, "scores.jsonl")
    shown = list(itertools.islice(storage.iter_jsonl(scores), HTML_TEXTS))
    suspicious = most_suspicious(storage.iter_jsonl(scores))
    write_report(shown, storage.join(output, "report.html"), "p(H) per word", suspicious, total)
