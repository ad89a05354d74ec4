"""``hades_ray.Detector``: a trained detector in a notebook or one's own generation loop, with the
numbers of the commands.

Nothing here scores by itself. ``score`` runs a text through the score job's own stages (spaCy targets,
then the detector: ``hades_ray/score/stages.py``) the way ``hades-ray serve`` runs a request
(``hades_ray/serve/scoring.py``), and each record is ``text_record``'s: the line ``hades-ray score``
writes to ``scores.jsonl`` for that text. ``stream`` answers as ``POST /score/next`` does
(``score.stream.TextStream``). Both score with ``detect.torch_threads`` threads, as the score job's
actors do, since a CPU forward's rounding depends on the thread count. The detector's model is loaded
once per mode and shared by every setting of words and language.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path


class Detector:
    """A detector ``hades-ray train`` wrote, loaded in this process (``Detector.open``)."""

    def __init__(self, folder_detector, config, device: str = "cpu"):
        self.detector = folder_detector  # hades_ray.detect.detector.Detector: the folder and detector.json
        self.config = config
        self.device = device
        self._scorers: dict = {}  # (mode, stride) -> the loaded model's Scorer
        self._services: dict = {}  # (mode, words, language) -> ServiceScorer sharing that Scorer

    @classmethod
    def open(cls, reference, revision: str | None = None, config=None) -> Detector:
        """The detector in folder ``reference``, or in the hub repository ``reference`` (``ID@COMMIT``
        or ``revision=COMMIT`` pins it; ``HF_HUB_OFFLINE`` reads the cache only). ``config``: a
        ``HadesConfig`` (default: what ``hades-ray score`` uses without flags, the ``local`` preset).
        A missing or broken detector is one ``ValueError`` line."""
        from hades_ray.api.hub import detector_folder
        from hades_ray.config import load_config
        from hades_ray.detect.detector import Detector as Folder

        return cls(Folder.open(detector_folder(reference, revision)), config or load_config())

    @property
    def folder(self) -> Path:
        return self.detector.folder

    @property
    def kind(self) -> str:
        """``transformer`` (a span classifier), ``lr`` or ``svm``."""
        return self.detector.kind

    @property
    def is_probe(self) -> bool:
        """Whether it is a probe (``hades-ray train --detector probe``): a head on a generator's own states."""
        from hades_ray.detect.probe import is_probe

        return is_probe(self.detector.meta)

    @property
    def mode(self) -> str:
        """The mode it scores in by default: ``score.mode`` of the config, else the one it trained in."""
        return self.detector.scoring_mode(self.config.score.mode)

    @property
    def threshold(self) -> float:
        """The threshold words are flagged at by default: ``score.threshold``, else the detector's own."""
        given = self.config.score.threshold
        return self.detector.threshold if given is None else float(given)

    def __repr__(self) -> str:
        return f"Detector({str(self.folder)!r}, kind={self.kind!r}, mode={self.mode!r}, device={self.device!r})"

    def to(self, device) -> Detector:
        """Move the span classifier to ``device`` (``"cuda"``, ``"cpu"``, a ``torch.device``); returns
        the detector. LR/SVM detectors compute their features where their stages put them."""
        self.device = str(device)
        for scorer in self._scorers.values():
            if getattr(scorer, "model", None) is not None:
                scorer.model.to(self.device)
        return self

    def score(self, texts, language=None, mode=None, words=None, threshold=None):
        """Each text's record, the line ``hades-ray score`` writes to ``scores.jsonl`` for it:
        ``{"id": "text:N", "source", "text", "threshold", "words": [{"word", "start", "end", "p",
        "flag"}], "n_words", "n_flagged", "max_p"}`` (``language`` after ``source`` when it is not
        English; N the text's place from 1). One text gives one record, a list a list of them. The
        p(H) are the command's bits for the same detector and settings, alone or in any batch.
        ``language``: the texts' (default: the detector's); ``mode``: online or offline (default: the
        trained one); ``words``: content or all; ``threshold``: flag at p(H) >= it (default: the
        detector's). A text that is no string, empty or over ``score.max_chars`` is a ``ValueError``
        naming its place."""
        single = isinstance(texts, str)
        batch = [texts] if single else _as_list(texts)
        if not batch:
            return []
        service = self._service(mode, words, language)
        records = self._records(service, batch, threshold, listed=not single)
        return records[0] if single else records

    def stream(self, language=None, words=None, threshold=None):
        """A ``WordStream`` over a text as it is generated: ``feed(text_so_far, final=False)`` returns
        the words completed since the last call, as ``POST /score/next`` answers. Online scoring only."""
        from hades_ray.api.stream import WordStream

        service = self._service(None, words, language)
        if service.mode != "online":
            raise ValueError(
                f"{self.folder} scores offline (it reads right context): streaming needs an online detector"
            )
        return WordStream(service, _threshold(threshold, service.threshold), threads=self.config.detect.torch_threads)

    def stopping_criteria(self, tokenizer, threshold=None, language=None, words=None):
        """A ``transformers.StoppingCriteria`` for ``model.generate``: a row stops once a word it wrote
        is flagged (p(H) >= ``threshold``, default the detector's); ``.stopped`` then holds, per row,
        that word (offsets in the row's decoded prompt and continuation), or None. Online only."""
        from hades_ray.api.stopping import HallucinationStop

        if self.kind != "transformer" or self.mode != "online":
            raise ValueError(
                f"{self.folder} scores {self.mode} ({self.kind}): stopping a generation needs an online "
                "span classifier, which judges a word from the text before it (hades-ray train --mode online)"
            )
        return HallucinationStop(self.stream(language, words, threshold), tokenizer)

    def probe(self, model, tokenizer=None, threshold=None, language=None, words=None, stop: bool = True):
        """A probe's watcher on ``model.generate`` (``hades_ray/guard/probe.py``): pass it as
        ``stopping_criteria=[probe]``; each generated word's p(H) comes from the hidden states the generator
        computes anyway, with no second forward. ``probe.words[i]`` holds row ``i``'s judged words
        (``score``'s word records, offsets in the row's prompt + continuation); with ``stop`` a row stops
        at its first flagged word (``probe.stopped[i]``). ``tokenizer``: the generator's (default: the
        probe's). A detector that is no probe, or a generator that is not its backbone, is refused in one
        ``ValueError`` line; ``with det.probe(model) as probe:`` removes its hooks afterwards."""
        from hades_ray.detect.model import TOKENIZER, load_tokenizer
        from hades_ray.guard.probe import GenerationProbe, stream_maker

        if not self.is_probe:
            raise ValueError(f"{self.folder} is no probe: train one with hades-ray train --detector probe")
        tokenizer = tokenizer or load_tokenizer(str(self.folder / TOKENIZER))
        streams = stream_maker(self.detector, self.config, _threshold(threshold, None), language, words)
        head, threads = self.detector.load_head(), self.config.detect.torch_threads
        return GenerationProbe(model, tokenizer, head, self.detector.meta, streams, stop, threads)

    def online_scorer(self, stride: int):
        """The span classifier loaded online with ``stride`` (the guard's judge, ``guarded_generate``)."""
        self.detector.require_online()
        return self._scorer("online", stride)

    def _records(self, service, texts: list, threshold, listed: bool) -> list[dict]:
        from hades_ray.detect.stable import torch_threads
        from hades_ray.score.writer import text_record
        from hades_ray.serve.scoring import RequestError

        for k, text in enumerate(texts):
            if not isinstance(text, str):
                where = f"texts[{k}]" if listed else "text"
                raise ValueError(f"{where}: text_not_a_string (got {type(text).__name__})")
        try:
            table = service.table(texts, listed=listed)
        except RequestError as error:
            raise ValueError(error.reason) from None
        with torch_threads(self.config.detect.torch_threads):  # the score job's actors' threads: its bits
            (rows,) = service.score_tables([table])
        cut = _threshold(threshold, service.threshold)
        return [text_record(row, cut, service.language) for row in rows]

    def _service(self, mode, words, language):
        from hades_ray.score.settings import WORD_CHOICES
        from hades_ray.serve.scoring import ServiceScorer

        if words is not None and words not in WORD_CHOICES:
            raise ValueError(f"words={words!r}: one of {', '.join(WORD_CHOICES)}")
        key = (mode, words, language)
        if key not in self._services:
            changes = {name: value for name, value in (("mode", mode), ("words", words)) if value is not None}
            config = dataclasses.replace(self.config, score=dataclasses.replace(self.config.score, **changes))
            scoring_mode = self.detector.scoring_mode(config.score.mode)
            scorer = self._scorer(scoring_mode, config.score.stride)
            self._services[key] = ServiceScorer(self.detector, config, language=language, scorer=scorer)
        return self._services[key]

    def _scorer(self, mode: str, stride: int):
        key = (mode, stride)
        if key not in self._scorers:
            forward_batch = self.config.detect.score_batch_size
            self._scorers[key] = self.detector.scorer(mode, self.device, forward_batch, stride)
        return self._scorers[key]


def _as_list(texts) -> list:
    if isinstance(texts, (bytes, dict)) or not hasattr(texts, "__iter__"):
        raise ValueError(f"texts: give a string or a list of strings (got {type(texts).__name__})")
    return list(texts)


def _threshold(given, default: float) -> float:
    if given is None:
        return default
    if isinstance(given, bool) or not isinstance(given, (int, float)) or not 0.0 <= given <= 1.0:
        raise ValueError(f"threshold={given!r}: a number in [0, 1]")
    return float(given)
