"""The perturbation job, declared for the executor: shards of the input, the four stages, the shard
writer, the settings digest and the summary's layout."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from pathlib import Path

from hades_ray.config import RESOLVED_NAME, HadesConfig, resolve_language, resolved_yaml
from hades_ray.io.readers import plan_shards, read_shard
from hades_ray.perturb.artifacts import artifact_summary
from hades_ray.perturb.stages import perturb_stages
from hades_ray.perturb.writer import QUARANTINE_KEEPS, write_shard
from hades_ray.pipeline.executor import Executor
from hades_ray.pipeline.job import ShardJob
from hades_ray.text.languages import language_of
from hades_ray.text.pipeline import text_settings

TOTALS = ("read", "kept", "perturbed", "instances", "quarantined")


# Keys that came after outputs were written with this digest: they count only when set away from their
# default, so those outputs' markers stay valid. At their defaults they keep the bytes (exact packing and
# the chunked log-softmax are byte-identical to the code before them; tests/perturb/test_packing.py).
LATER_KEYS = {
    "replace": ("max_batch_tokens", "packing", "bin_tokens"),
    "rank": ("max_batch_tokens", "packing", "bin_tokens", "logits_mb"),
}


def config_digest(config: HadesConfig) -> str:
    """What the output depends on, named one by one so that a new section never changes it: the preset,
    seed, spaCy model, models and the perturb section without its resources (and ``LATER_KEYS`` at
    their defaults)."""
    perturb = dataclasses.asdict(config.perturb)
    del perturb["resources"]
    defaults = dataclasses.asdict(type(config.perturb)())
    for stage, keys in LATER_KEYS.items():
        for key in keys:
            if perturb[stage][key] == defaults[stage][key]:
                del perturb[stage][key]
    # The shared prefix came later and moves perplexities' last bits (a near-tie may keep another
    # candidate): it counts only when on, so an output written before (every candidate whole) is the
    # share_prefix=false run's, and is refused rather than mixed with shared shards under the new default.
    if not perturb["rank"]["share_prefix"]:
        del perturb["rank"]["share_prefix"]
    relevant = {"preset": config.preset, "seed": config.seed, **text_settings(config)}
    relevant |= {"models": dataclasses.asdict(config.models), "perturb": perturb}
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()


def perturb_job(
    config: HadesConfig, input_path: str | Path, output: str | Path, limit: int | None = None, sample: int | None = None
) -> ShardJob:
    """The perturbation of ``input_path`` (a file, a folder, a URI, or ``demo``) into ``output``."""
    source = str(input_path)
    config = resolve_language(config, source)
    return ShardJob(
        name="perturb",
        output=str(output),
        digest=config_digest(config),
        plan=lambda mapper: plan_shards(source, config.perturb.shard_rows, limit, sample, config.seed, mapper),
        read=read_shard,
        stages=functools.partial(perturb_stages, config),
        write=functools.partial(
            write_shard, output=str(output), lowercase=config.perturb.lowercase_instances, language=config.lang
        ),
        summarize=functools.partial(summarize, text=text_summary(config)),
        views=("instances", "quarantine"),
        resolved={RESOLVED_NAME: resolved_yaml(config)},
        rows_verb="leads",
    )


def run_perturb(
    config: HadesConfig,
    input_path: str | Path,
    output_dir: str | Path,
    limit: int | None = None,
    sample: int | None = None,
    executor: Executor | None = None,
) -> dict:
    """Perturb ``input_path`` into ``output_dir`` (on Ray per the config unless ``executor`` says
    otherwise); returns the summary."""
    from hades_ray.models.registry import resolve_model
    from hades_ray.text.pipeline import load_pipeline

    config = resolve_language(config, input_path)
    # A model path that does not exist, or a language whose segmenter or spaCy pipeline is not installed,
    # is a user error here, not an actor failing on a worker.
    resolve_model(config.models.mlm)
    resolve_model(config.models.causal_lm)
    load_pipeline(config.lang, config.spacy_model)
    executor = executor or Executor.of(config.ray)
    return executor.run(perturb_job(config, input_path, output_dir, limit, sample))


def text_summary(config: HadesConfig) -> dict:
    """The run's language and where its sentences, words and entities came from, for ``summary.json``."""
    from hades_ray.text.pipeline import entity_source

    lang = config.lang
    segmenter = lang.segmenter.module if lang.segmenter else "spaces and punctuation"
    return {"language": lang.name, "words": segmenter, "entities": entity_source(lang, config.spacy_model)}


def language_runs(input_path: str, output: str, language: str) -> list[tuple[str, str, str]]:
    """``(language, input, output)`` of each run that ``input_path`` asks for: with ``language`` auto, a
    folder that names no language but holds Wiki-40B language folders (``in/de/``, ``in/zh-cn/``) is one
    run per language, each into its own ``output/LANG`` (outputs of two languages never share a folder);
    anything else is one run."""
    from hades_ray.pipeline import storage
    from hades_ray.text.languages import LANGUAGES, language_from_path

    source = str(input_path)
    if language != "auto" or language_from_path(source) or not storage.exists(source):
        return [(language, source, str(output))]
    filesystem, root = storage.resolve(source)
    import pyarrow.fs as pafs

    infos = filesystem.get_file_info(pafs.FileSelector(root, allow_not_found=True))
    folders = sorted(i.base_name for i in infos if i.type == pafs.FileType.Directory and i.base_name in LANGUAGES)
    if not folders:
        return [(language, source, str(output))]
    return [(name, storage.join(source, name), storage.join(str(output), name)) for name in folders]


def summarize(merged: dict, text: dict | None = None) -> dict:
    """``summary.json``'s fields from the shards' merged stats (and the run's ``text_summary``)."""
    counts = merged.get("counts", {})
    reasons = {k: v for k, v in counts.items() if k not in TOTALS and k not in QUARANTINE_KEEPS}
    return {
        **(text or {}),
        "read": counts.get("read", 0),
        "kept": counts.get("kept", 0),
        "too_short": counts.get("too_short", 0),
        "no_maskable_words": counts.get("no_maskable_words", 0),
        "quarantined": counts.get("quarantined", 0),
        "quarantined_by_reason": dict(sorted(reasons.items())),
        "perturbed": counts.get("perturbed", 0),
        "instances": counts.get("instances", 0),
        "artifacts": artifact_summary(merged.get("artifacts", {}), language_of(text or {})),
    }
