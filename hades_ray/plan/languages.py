"""The sample's languages: which files are in which Wiki-40B language, and what a text costs in each.

A folder laid out as Wiki-40B is (``in/de/...``, ``in/zh-cn/...``, or ``wiki40b-ja.parquet`` files) holds
one sample per language; the job runs each language as its own run (``config.resolve_language``), so the
plan counts each with that language's config: its spaCy pipeline, stop words and per-language overrides.
Files that name no language are in the config's language (``--language``; ``auto``: the one ``--input``
names).

The same text costs more model tokens in some scripts than in others, so each language reports its texts'
words (the language's spaCy tokenizer) and their masked-LM and causal-LM tokens, per text and per word.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from hades_ray.config import HadesConfig, resolve_language
from hades_ray.io.demo_corpus import DEMO_INPUT
from hades_ray.io.readers import input_files
from hades_ray.text.languages import Language, language_from_path
from hades_ray.text.pipeline import load_pipeline, resolve_pipeline_name
from hades_ray.text.stopwords import stop_words

TOKENIZE_BATCH = 64  # texts per tokenizer call (the fast tokenizers batch in Rust)


@dataclass
class LanguageSample:
    """One language's part of ``--input``: the config its run uses, and the files or folders it reads."""

    config: HadesConfig
    paths: list[str] = field(default_factory=list)

    @property
    def language(self) -> Language:
        return self.config.lang


def _language_root(input_path: str, file: str) -> tuple[str | None, str]:
    """The Wiki-40B language that ``file``'s path under ``input_path`` names, and the folder or file
    that names it (the whole input when none does)."""
    root = str(input_path).rstrip("/")
    relative = PurePosixPath(file[len(root) :].lstrip("/"))
    found, upto = None, 0
    for index, part in enumerate(relative.parts):
        name = language_from_path(part)
        if name:
            found, upto = name, index + 1
    if found is None:
        return None, str(input_path)
    return found, "/".join([root, *relative.parts[:upto]])


def language_samples(config: HadesConfig, input_path: str) -> list[LanguageSample]:
    """``input_path`` split by language, in the order of their names (see the module docstring)."""
    if str(input_path) == DEMO_INPUT:
        return [LanguageSample(resolve_language(config, input_path), [str(input_path)])]
    by_language: dict[str, LanguageSample] = {}
    named = [(file, *_language_root(str(input_path), file)) for file in input_files(str(input_path))]
    mixed = any(name for _, name, _ in named)
    for file, name, root in named:
        if name is None:  # the config's language, or (auto) the one --input names
            resolved = resolve_language(config, input_path)
            root = file if mixed else root
        else:
            resolved = resolve_language(dataclasses.replace(config, language=name))
        sample = by_language.setdefault(resolved.language, LanguageSample(resolved))
        if root not in sample.paths:
            sample.paths.append(root)
    return [by_language[name] for name in sorted(by_language)]


def text_costs(config: HadesConfig, shards: list[list[dict]], tokenizers) -> dict:
    """What the sample's texts (rows with a first paragraph, whatever the filters decide) cost in this
    language: their words as its spaCy pipeline cuts them (punctuation and spaces left out), the share of
    those that are stop words, and their tokens in the masked LM and the causal LM (no special tokens,
    not truncated), in all, per text and per word."""
    lang = config.lang
    nlp = load_pipeline(lang, config.spacy_model)
    stops = stop_words(config.perturb.mask.stopwords, lang)
    texts = [row["text"] for rows in shards for row in rows if not row.get("reject") and row["text"].strip()]
    words = stop = 0
    for doc in map(nlp.tokenizer, texts):
        kept = [token for token in doc if not (token.is_punct or token.is_space)]
        words += len(kept)
        stop += sum(token.lower_ in stops for token in kept)
    mlm, lm = _token_count(tokenizers.mlm, texts), _token_count(tokenizers.lm, texts)
    per_text, per_word = max(len(texts), 1), max(words, 1)
    return {
        "spacy_model": resolve_pipeline_name(lang, config.spacy_model),
        "models": {"mlm": config.models.mlm, "causal_lm": config.models.causal_lm},
        "texts": len(texts),
        "words": words,
        "words_per_text": round(words / per_text, 2),
        "stop_word_share": round(stop / per_word, 4),
        "mlm_tokens": mlm,
        "mlm_tokens_per_text": round(mlm / per_text, 2),
        "mlm_tokens_per_word": round(mlm / per_word, 3),
        "lm_tokens": lm,
        "lm_tokens_per_text": round(lm / per_text, 2),
        "lm_tokens_per_word": round(lm / per_word, 3),
    }


def _token_count(tokenizer, texts: list[str]) -> int:
    total = 0
    for begin in range(0, len(texts), TOKENIZE_BATCH):
        batch = texts[begin : begin + TOKENIZE_BATCH]
        # verbose=False: a text longer than the model's inputs is counted whole, without the warning
        encoded = tokenizer(batch, add_special_tokens=False, verbose=False)["input_ids"]
        total += sum(len(ids) for ids in encoded)
    return total


@dataclass
class LanguageCount:
    """One language's sample counted: the job's work on it, and what its texts cost."""

    sample: LanguageSample
    tokenizers: object  # count.Tokenizers
    counts: object  # count.SampleCounts
    costs: dict


def count_languages(
    samples: list[LanguageSample], lm_context: int | None = None, limit=None, sample=None, **options
) -> list[LanguageCount]:
    """Each language's sample read as its run reads it (``limit`` and ``sample`` apply to each folder or
    file), MASK run with its pipeline, the model work counted (``options``: ``count_prepared``'s)."""
    from hades_ray.plan.count import SampleCounts, count_prepared, load_tokenizers, prepare_sample

    loaded: dict[tuple, object] = {}
    counted = []
    for part in samples:
        config = part.config
        models = (config.models.mlm, config.models.causal_lm, tuple(sorted(config.models.revisions.items())))
        if models not in loaded:
            loaded[models] = load_tokenizers(config, lm_context)
        tokenizers = loaded[models]
        counts, shards = SampleCounts(), []
        for path in part.paths:
            prepared = prepare_sample(config, path, tokenizers, limit, sample)
            counts += count_prepared(prepared, config, tokenizers, **options)
            shards += prepared.shards
        counted.append(LanguageCount(part, tokenizers, counts, text_costs(config, shards, tokenizers)))
    return counted
