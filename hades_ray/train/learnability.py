"""Labelled instances without human judgments, from the perturbation job's pool.

Replaced spans are label 1; untouched content words (letters and the marks written on them, not the
language's stop words) of the same perturbed texts are label 0. Splits go by ``doc_id``, so no text is
on both sides of a split.
A replacement equal to its original (the MLM predicted the original) is no hallucination: skipped.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

from hades_ray.io.hades_format import Instance
from hades_ray.text.languages import Language
from hades_ray.text.stopwords import stop_words
from hades_ray.text.words import is_word


def _is_content_word(word: str, stop: frozenset[str] | set[str], language: Language) -> bool:
    """Letters (in English ``str.isalpha``, as its negatives were always drawn; elsewhere with the vowel signs
    Hindi or Thai write on them) and no stop word."""
    if language.is_default:
        return word.isalpha() and word.lower() not in stop
    return is_word(word, letters_only=True) and word.lower() not in stop


def doc_instances(
    doc_id: str,
    perturbed: str,
    spans: list[dict],
    rng: random.Random,
    negatives_per_positive: float = 1.0,
    stop: frozenset[str] | set[str] | None = None,
    *,
    language: Language,
) -> list[Instance]:
    """Positives (replaced spans) and sampled negatives (untouched content words) of one text in ``language``
    (non-English instances name it, as the perturbation's HaDes records do)."""
    from hades_ray.perturb.spans import words_with_span_indices

    stop = stop_words("auto", language) if stop is None else stop  # as MASK uses them (English: the paper's NLTK)
    spans = sorted(spans, key=lambda s: s["start"])
    words, ranges = words_with_span_indices(perturbed, spans, language)
    named = language.record_fields()
    touched = {i for first, last in ranges for i in range(first, last + 1)}
    out = []
    for k, (span, (first, last)) in enumerate(zip(spans, ranges)):
        if last >= first and span["replacement"].strip().lower() != span["original"].strip().lower():
            out.append(Instance(words, first, last, 1, {"id": f"{doc_id}#r{k}", "doc_id": doc_id, **named}))
    candidates = [i for i, w in enumerate(words) if i not in touched and _is_content_word(w, stop, language)]
    n_neg = min(len(candidates), round(len(out) * negatives_per_positive))
    for i in sorted(rng.sample(candidates, n_neg)):
        out.append(Instance(words, i, i, 0, {"id": f"{doc_id}#k{i}", "doc_id": doc_id, **named}))
    return out


def pool_instances(
    pool_dir: str | Path,
    seed: int = 0,
    negatives_per_positive: float = 1.0,
    limit_docs: int | None = None,
    *,
    language: Language,
) -> list[Instance]:
    """Labelled instances from ``pool/part-*.parquet`` (columns doc_id, perturbed, spans) of a pool in ``language``."""
    import pyarrow.parquet as pq

    parts = sorted(Path(pool_dir).glob("part-*.parquet"))
    if not parts:
        raise FileNotFoundError(f"no part-*.parquet under {pool_dir}")
    rng, stop, out, docs = random.Random(seed), stop_words("auto", language), [], 0
    for part in parts:
        for row in pq.read_table(part, columns=["doc_id", "perturbed", "spans"]).to_pylist():
            if limit_docs is not None and docs >= limit_docs:
                return out
            if row["spans"]:
                doc = str(row["doc_id"]), row["perturbed"], row["spans"], rng, negatives_per_positive, stop
                out += doc_instances(*doc, language=language)
                docs += 1
    return out


def split_by_doc(instances: list[Instance], fractions=(0.7, 0.1, 0.2), seed: int = 0, doc=None) -> list[list[Instance]]:
    """Train/valid/test (or any number of parts) by a seeded hash of each instance's document: ``doc(i)``,
    by default its ``doc_id``."""
    bounds, total = [], 0.0
    for f in fractions:
        total += f
        bounds.append(total / sum(fractions))
    parts: list[list[Instance]] = [[] for _ in fractions]
    for inst in instances:
        digest = hashlib.sha256(f"{seed}:{doc(inst) if doc else inst.extra['doc_id']}".encode()).digest()
        u = int.from_bytes(digest[:8], "big") / 2**64
        parts[next(i for i, b in enumerate(bounds) if u < b or i == len(bounds) - 1)].append(inst)
    return parts


def learnability_files(config, work: Path, source, docs: int, shares: dict[str, float], pool=None) -> dict:
    """The labelled instances of ``pool``, else of the first ``docs`` records of ``source`` perturbed into
    work/perturb (unless done), split by document in ``shares`` and written to work/NAME.jsonl: their
    ``paths``, counts (``instances``) and, when the perturbation ran now, its ``perturb_seconds``."""
    from hades_ray.io.hades_format import write_instances
    from hades_ray.perturb.runner import run_perturb
    from hades_ray.pipeline.executor import Executor
    from hades_ray.pipeline.laps import Laps

    out: dict = {}
    if pool is None:
        pool = work / "perturb" / "pool"
        if not pool.is_dir():
            laps = Laps()
            run_perturb(config, source, work / "perturb", limit=docs, executor=Executor.of(config.ray, force=True))
            out["perturb_seconds"] = laps.lap()
    instances = pool_instances(pool, seed=config.seed, language=config.lang)
    parts = split_by_doc(instances, tuple(shares.values()), seed=config.seed)
    out["paths"] = [write_instances(part, work / f"{name}.jsonl") for part, name in zip(parts, shares)]
    out["instances"] = {name: len(part) for name, part in zip(shares, parts)}
    return out


def swapped_word_instances(texts: list[str], n: int, seed: int) -> list[Instance]:
    """``n`` instances cut from ``texts`` of 12 words or more (the first 120 words of one): a random word as
    the span, replaced by a word of another text (label 1) in every other instance. The labels are
    synthetic; the texts and their lengths are real, which is what a speed measure depends on."""
    rng = random.Random(seed)
    leads = [words for words in (t.split() for t in texts) if len(words) >= 12]
    out = []
    for i in range(n):
        words = list(rng.choice(leads))[:120]
        start = rng.randrange(len(words))
        if i % 2:
            words[start] = rng.choice(rng.choice(leads))
        out.append(Instance(words=words, start=start, end=start, label=i % 2, extra={"id": f"wiki-{i}"}))
    return out
