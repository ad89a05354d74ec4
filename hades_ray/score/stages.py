"""The score job's stages: find each text's target words (CPU, spaCy), then score them (the detector).

Rows are texts; the targets and their scores travel as list columns, so a text's words stay on its
row from reader to writer. A rejected row (``reject`` set) passes through with empty lists.
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa

from hades_ray.pipeline.stage import Resources, Stage, setup_torch
from hades_ray.score.words import Targets, find_targets
from hades_ray.text.languages import Language
from hades_ray.text.languages import language as find_language

INT_LIST = pa.list_(pa.int32())
TARGET_COLUMNS = {
    "words": pa.list_(pa.string()),
    "word_start": INT_LIST,
    "word_end": INT_LIST,
    "target_first": INT_LIST,
    "target_last": INT_LIST,
}


def targets_of(batch: pa.Table) -> list[Targets]:
    columns = [batch.column(c).to_pylist() for c in TARGET_COLUMNS]
    return [Targets(*row) for row in zip(*columns)]


def text_pipeline(language: Language, words: str, spacy_model: str):
    """spaCy for ``content`` targets of ``language`` (loaded once per process); None for ``all``. Where a
    language writes no spaces its segmenter cuts the words, so that is checked under ``all`` too: whatever
    is missing is a one-line error saying what to install."""
    from hades_ray.text.pipeline import load_pipeline, word_tokenizer

    if not language.spaced:
        word_tokenizer(language)
    return load_pipeline(language, spacy_model) if words == "content" else None


class TargetsStage(Stage):
    """CPU: the units of each text and its target spans (content words, entities whole; or all words).
    A batch with a ``language`` column (the service's requests) is cut per row's language; otherwise
    every text is in the stage's ``language``."""

    name = "targets"
    inputs = {"text": pa.string(), "reject": pa.string()}
    outputs = TARGET_COLUMNS

    def __init__(
        self,
        resources: Resources,
        words: str,
        spacy_model: str,
        language: Language,
        spacy_models: dict[str, str] | None = None,
    ):
        super().__init__(resources)
        self.words, self.spacy_model, self.language = words, spacy_model, language
        self.spacy_models = spacy_models or {}  # by name: rows in another language than ``language``: its pipeline

    def setup(self) -> None:
        self.pipeline(self.language)  # a missing pipeline or segmenter fails here, before any text

    def pipeline(self, language: Language):
        """``text_pipeline`` of ``language``, with its own spaCy pipeline when it is not the stage's."""
        own = language == self.language
        name = self.spacy_model if own else self.spacy_models.get(language.name, self.spacy_model)
        return text_pipeline(language, self.words, name)

    def process(self, batch: pa.Table) -> dict[str, list]:
        empty = Targets([], [], [], [], [])
        texts, rejects = batch.column("text").to_pylist(), batch.column("reject").to_pylist()
        named = batch.column("language").to_pylist() if "language" in batch.column_names else None
        languages = [self.language] * len(texts) if named is None else [find_language(n) for n in named]
        # once per language, not per row; a rejected row's language is never loaded
        kept = {lang for lang, reject in zip(languages, rejects) if not reject}
        pipelines = {lang: self.pipeline(lang) for lang in kept}
        found = [
            empty if reject else find_targets(text, self.words, pipelines[lang], lang=lang)
            for text, reject, lang in zip(texts, rejects, languages)
        ]
        fields = [f.name for f in dataclasses.fields(Targets)]
        return {name: [getattr(t, field) for t in found] for name, field in zip(TARGET_COLUMNS, fields)}


class WordScoreStage(Stage):
    """Model: p(H) of every target of every text (the detector loaded once per actor)."""

    name = "score"
    inputs = TARGET_COLUMNS
    outputs = {"p": pa.list_(pa.float64())}

    def __init__(
        self, resources: Resources, detector, mode: str | None, forward_batch: int, stride: int = 0, scorer=None
    ):
        super().__init__(resources)
        self.detector, self.mode, self.forward_batch, self.stride = detector, mode, forward_batch, stride
        self.scorer = scorer  # a ``Scorer`` loaded by the caller (the Python API): setup loads none

    def setup(self) -> None:
        if self.scorer is None:
            device = setup_torch(self.resources)
            self.scorer = self.detector.scorer(self.mode, device, self.forward_batch, self.stride)

    def process(self, batch: pa.Table) -> dict[str, list]:
        return {"p": [p.tolist() for p in self.scorer.score(targets_of(batch))]}


def score_stages(
    detector,
    mode: str | None,
    words: str,
    config,
    num_gpus: float = 0.0,
    stride: int = 0,
    spacy_models=None,
    scorer=None,
) -> list[Stage]:
    """The two stages with the detect section's resources (``detect.actors``, ``detect.actor_cpus``);
    ``num_gpus`` per scoring actor (0: CPU); texts in ``config.language`` (a concrete one), or in the
    language of a batch's ``language`` column (``spacy_models``: the pipeline of each); ``scorer``: the
    detector already loaded in this process (in ``mode``, with ``stride``), used instead of loading it."""
    d = config.detect
    cpu = Resources(num_cpus=d.actor_cpus, max_actors=d.actors, batch_size=256)
    model = Resources(**d.actor_resources(num_gpus, batch_size=d.score_batch_size * 4))
    return [
        TargetsStage(cpu, words, config.spacy_model, config.lang, spacy_models),
        WordScoreStage(model, detector, mode, d.score_batch_size, stride, scorer),
    ]
