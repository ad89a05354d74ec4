"""The allowed range of every numeric config key, checked on every path that builds a config.

Intervals use the usual notation: ``[`` and ``]`` include the end, ``(`` and ``)`` exclude it. Keys
may use ``*`` for one level (``perturb.resources.*.batch_size``); a list-valued key bounds each item.
Every float must also be finite (YAML reads ``.inf`` and ``.nan`` as floats). A numeric key that a
later section adds without an entry here gets ``DEFAULT_BOUND``; tests/test_config.py lists the keys
that lack an explicit one, so a new key's author picks its range on purpose.
"""

from __future__ import annotations

import dataclasses
import math
import re
import typing
from fnmatch import fnmatchcase

DEFAULT_BOUND = "[0, 1000000000]"
BIG = "1000000000"
INT32 = "2147483648"  # what the CLI's integer flags accept (cli_common.POSITIVE_INT)

BOUNDS: dict[str, str] = {
    "seed": "[0, 4294967295]",  # numpy and torch both take 32-bit seeds
    "perturb.read.min_sentences": "[1, 1000]",
    "perturb.read.max_chars": "[1, 10000000]",
    "perturb.read.min_alpha_ratio": "[0, 1]",
    "perturb.read.min_english_stopword_ratio": "[0, 1]",
    "perturb.read.shard_size": "[1, 1000000]",
    "perturb.mask.ratio": "(0, 1]",
    "perturb.mask.context_sentences": "[0, 100]",
    "perturb.mask.min_spans": "[1, 1000]",
    "perturb.mask.max_span_tokens": "[1, 512]",
    "perturb.replace.top_k": "[1, 1000]",
    "perturb.replace.top_p": "(0, 1]",
    "perturb.replace.temperature": "(0, 100]",
    "perturb.replace.max_length": "[8, 1000000]",
    "perturb.rank.num_candidates": "[1, 1000]",
    "perturb.rank.max_length": "[8, 1000000]",
    "perturb.*.max_batch_tokens": "[1, 1000000000]",  # REPLACE and RANK: tokens of one packed forward
    "perturb.*.bin_tokens": "[1, 1000000]",
    "perturb.rank.logits_mb": "[1, 1000000]",
    "perturb.resources.*.concurrency": "[1, 10000]",
    "perturb.resources.*.min_concurrency": "[1, 10000]",
    "perturb.resources.*.num_cpus": "[0, 1024]",
    "perturb.resources.*.num_gpus": "[0, 64]",
    "perturb.resources.*.batch_size": "[1, 100000]",
    "perturb.resources.*.torch_threads": "[1, 1024]",
    "ray.num_cpus": "[0, 100000]",  # 0: the machine's cores
    "detect.window": "[1, 1000000]",  # >= 8 when counted in tokens (detect/settings.py)
    "detect.mlp_layers": "[1, 16]",
    "detect.lr": "[0, 1]",  # 0: the paper's value for the backbone family (detect/learning_rate.py)
    "detect.epochs": "[1, 10000]",
    "detect.batch_size": "[1, 100000]",
    "detect.workers": "[1, 10000]",
    "detect.worker_cpus": "(0, 1024]",
    "detect.torch_threads": "[1, 1024]",
    "detect.max_failures": "[0, 100]",
    "detect.linear_max_iter": "[1, 100]",
    "detect.linear_n_iter_no_change": "[1, 1000]",
    "detect.linear_tol": "(0, 1]",
    "detect.svm_calibration_folds": "[2, 100]",
    "detect.ppmi_vocab": "[1, 10000000]",
    "detect.ppmi_window": "[1, 1000]",
    "detect.feature_window": "[8, 1000000]",
    "detect.feature_batch_size": "[1, 100000]",
    "detect.score_batch_size": "[1, 100000]",
    "detect.actors": "[1, 10000]",
    "detect.actor_cpus": "(0, 1024]",
    "select.round_sizes": "[1, 10000000]",
    "select.schedule.rounds": "[0, 10000]",  # 0: off, round_sizes applies
    "select.schedule.first": "[1, 10000000]",
    "select.schedule.last": "[1, 10000000]",
    "select.schedule.total": f"[1, {BIG}]",
    "select.p_low": "[-1, 1]",  # negative: found per round
    "select.p_high": "[-1, 1]",
    "select.candidate_target": f"[0, {BIG}]",
    "select.paraphrase_threshold": "(0, 1]",
    "select.paraphrase_context_words": "[0, 10000]",
    "select.similarity_batch_size": "[1, 100000]",
    "select.similarity_num_cpus": "(0, 1024]",
    "select.date_name_drop_share": "[0, 1]",
    "select.ner_context_words": "[0, 10000]",
    "select.heldout_share": "(0, 1)",
    "select.folds": "[2, 100]",
    "select.min_train_instances": f"[1, {BIG}]",
    "select.detector_workers": "[1, 10000]",
    "select.similarity_num_gpus": "[0, 64]",
    "select.feature_concurrency": "[1, 10000]",
    "select.spacy_num_cpus": "(0, 1024]",
    "select.spacy_batch_size": "[1, 100000]",
    "select.calibration_share": "(0, 1)",
    "select.score_num_gpus": "[0, 64]",
    "annotate.judges": "[1, 100]",
    "annotate.max_judges": "[1, 100]",
    "annotate.min_agree_first": "[1, 100]",
    "annotate.min_agree_final": "[1, 100]",
    "annotate.split": f"[0, {BIG}]",
    "annotate.simulate_noise": "[0, 0.5]",
    "annotate.simulate_similarity": "[-1, 1]",
    "score.threshold": "[0, 1]",
    "score.max_chars": f"[1, {INT32}]",
    "score.shard_size": f"[1, {INT32}]",
    "score.num_gpus": "[0, 64]",
    "score.stride": f"[0, {INT32}]",  # 0: a quarter window
    "serve.port": "[1, 65535]",
    "serve.max_request_bytes": f"[1, {INT32}]",
    "serve.max_texts_per_request": "[1, 100000]",
    "serve.max_batch_size": "[1, 10000]",
    "serve.batch_wait_timeout_s": "[0, 60]",
    "serve.min_replicas": "[0, 10000]",
    "serve.max_replicas": "[1, 10000]",
    "serve.target_ongoing_requests": "(0, 100000]",
    "serve.max_ongoing_requests": "[1, 100000]",
    "serve.num_cpus": "[0, 1024]",
    "serve.num_gpus": "[0, 64]",
    "guard.threshold": "[0, 1]",
    "guard.max_retries": f"[0, {BIG}]",
    "guard.max_new_tokens": f"[1, {BIG}]",
    "guard.temperature": f"(0, {BIG}]",
    "guard.top_k": f"[0, {BIG}]",
    "guard.top_p": "(0, 1]",
    "guard.batch_size": f"[1, {BIG}]",
    "guard.slots": f"[0, {BIG}]",
    "guard.shard_size": f"[1, {BIG}]",
    "guard.actors": "[1, 10000]",
    "guard.num_gpus": "[0, 64]",
    "reproduce.bootstrap_resamples": "[100, 1000000]",  # scipy's percentile interval needs a few hundred
    "reproduce.max_concurrent_trials": "[0, 10000]",
    "reproduce.epoch_slice_share": "[0.01, 0.5]",  # 0: from the cluster's CPUs
}

_INTERVAL = re.compile(r"^([\[(])\s*(-?[0-9.e+]+)\s*,\s*(-?[0-9.e+]+)\s*([\])])$")


def bound_for(key: str) -> str:
    """The interval of ``key``: its own entry, else a matching ``*`` pattern, else ``DEFAULT_BOUND``."""
    if key in BOUNDS:
        return BOUNDS[key]
    return next((v for k, v in BOUNDS.items() if "*" in k and fnmatchcase(key, k)), DEFAULT_BOUND)


def in_interval(value: float, interval: str) -> bool:
    opening, low, high, closing = _INTERVAL.match(interval).groups()
    low_ok = value >= float(low) if opening == "[" else value > float(low)
    high_ok = value <= float(high) if closing == "]" else value < float(high)
    return low_ok and high_ok


def numeric_keys(section: typing.Any, prefix: str = "") -> typing.Iterator[tuple[str, typing.Any]]:
    """``(dotted key, value)`` of every numeric field under a config dataclass (lists item by item; an
    optional number left at None, which means "the default of elsewhere", is skipped)."""
    hints = typing.get_type_hints(type(section))
    for item in dataclasses.fields(section):
        value, key = getattr(section, item.name), prefix + item.name
        hint = hints[item.name]
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        if dataclasses.is_dataclass(value):
            yield from numeric_keys(value, key + ".")
        elif value is not None and (hint in (int, float) or inner in ([int], [float])):
            yield key, value


def bound_problems(key: str, value: typing.Any) -> list[str]:
    """Messages for a value (or each item of a list) that is not finite or outside its interval."""
    interval = bound_for(key)
    values = value if isinstance(value, list) else [value]
    problems = []
    for index, item in enumerate(values):
        name = f"{key}[{index}]" if isinstance(value, list) else key
        if isinstance(item, bool) or not isinstance(item, (int, float)):
            problems.append(f"{name}: expected a number, got {item!r}")
        elif isinstance(item, float) and not math.isfinite(item):
            problems.append(f"{name} must be a finite number, got {item!r}")
        elif not in_interval(item, interval):
            problems.append(f"{name} must be in {interval}, got {item!r}")
    return problems
