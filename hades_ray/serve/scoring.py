"""What a replica computes: the score job's own stages (``hades_ray/score/stages.py``) over the texts of
a batch of requests, and the records ``hades-ray score`` writes (``hades_ray/score/writer.py``).

Nothing here is a second scorer: a request's texts become the in-memory shard ``--text`` makes
(``memory_table``), run through the same target and score stages, and each text's record is
``text_record``. Each text's p(H) is the same bits alone or inside any batch
(``hades_ray/detect/scorer.py``), so batching callers together never changes an answer.
"""

from __future__ import annotations

import json

import pyarrow as pa

from hades_ray.detect.detector import Detector
from hades_ray.errors import UserError
from hades_ray.pipeline.executor import run_stages
from hades_ray.score.inputs import memory_table
from hades_ray.score.runner import language_config
from hades_ray.score.stages import score_stages
from hades_ray.score.writer import text_record
from hades_ray.text.languages import NAMES, Language, language, language_of

SOURCE = "text"  # ids and sources are "text:N", as `hades-ray score --text` names its one text


class RequestError(ValueError):
    """A client's mistake: the HTTP status and a one-line reason."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


def spacy_models(config) -> dict[str, str]:
    """The spaCy pipeline per Wiki-40B language under ``config`` (its ``languages.LANG.spacy_model``
    overrides, else ``spacy_model``): what a request in any language is cut with."""
    return {name: config.languages.get(name, {}).get("spacy_model", config.spacy_model) for name in NAMES}


class ServiceScorer:
    """The detector and the score stages, loaded once per replica. Texts are in ``language`` (the
    config's, or the detector's: ``hades_ray/score/runner.py``) unless a request names another."""

    def __init__(self, model, config, num_gpus: float = 0.0, language: str | None = None, scorer=None):
        """``model``: a detector folder (or an opened ``detect.detector.Detector``); ``language`` as
        ``--language``; ``scorer``: the detector already loaded in ``config.score.mode`` (the Python API's)."""
        self.detector = model if isinstance(model, Detector) else Detector.open(model)
        resolved = language_config(config, self.detector, given=language)
        s = resolved.score
        self.mode = self.detector.scoring_mode(s.mode)
        self.threshold = s.threshold if s.threshold is not None else self.detector.threshold
        self.words, self.max_chars, self.language = s.words, s.max_chars, resolved.lang
        self.stages = score_stages(
            self.detector, s.mode, s.words, resolved, num_gpus, s.stride, spacy_models(config), scorer
        )
        for stage in self.stages:
            stage.setup()

    def describe(self) -> dict:
        d = self.detector
        return {"detector": str(d.folder), "identity": d.identity(), "kind": d.kind, "mode": self.mode}

    def table(self, texts: list[str], language: str | None = None, listed: bool = False) -> pa.Table:
        """The texts as the score job's rows, with their language (None: the service's); a text score
        would quarantine, or a language this service cannot cut, is refused (422) instead, naming the
        text ``text``, or ``texts[K]`` when there are several (or ``listed``: they came as a list)."""
        language = self.check_language(language)
        table = memory_table(texts, SOURCE, self.max_chars)
        for k, reason in enumerate(table.column("reject").to_pylist()):
            if reason:
                where = "text" if len(texts) == 1 and not listed else f"texts[{k}]"
                raise RequestError(422, f"{where}: {reason}")
        return table.append_column("language", pa.array([language.name] * len(texts), pa.string()))

    def check_language(self, name: str | None) -> Language:
        """``name`` as a Wiki-40B language whose words and pipeline this replica has (loaded on first use);
        None: the service's language."""
        if name is None:
            return self.language
        try:
            found = language(name)
            self.stages[0].pipeline(found)
        except UserError as error:  # an unknown name, or a pipeline or segmenter not installed here
            raise RequestError(422, f"language: {error}") from None
        return found

    def score_tables(self, tables: list[pa.Table]) -> list[list[dict]]:
        """Each request's rows with their targets and p(H), all requests' texts in one pass."""
        rows, out, cursor = run_stages(pa.concat_tables(tables), self.stages, setup=False).to_pylist(), [], 0
        for table in tables:
            out.append(rows[cursor : cursor + table.num_rows])
            cursor += table.num_rows
        return out

    def text_stream(self, threshold: float, since: int = 0, language: str | None = None):
        """A ``score.stream.TextStream`` over one text in ``language`` (None: the service's), scored by the
        detector's incremental judge and cut as ``score_tables`` cuts (online only)."""
        from hades_ray.score.stream import TextStream

        lang = self.check_language(language)
        judge = self.stages[1].scorer.incremental(threshold, self.words, lang=lang)
        return TextStream(judge, self.words, self.stages[0].pipeline(lang), lang, threshold, since)


def records_body(rows: list[dict], threshold: float) -> bytes:
    """``{"results": [...]}`` with each record the exact bytes of its ``scores.jsonl`` line."""
    lines = [json.dumps(text_record(row, threshold, language_of(row)), ensure_ascii=False) for row in rows]
    return ('{"results": [' + ", ".join(lines) + "]}").encode()
