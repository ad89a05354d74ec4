"""Scoring a text as it is generated: ``POST /score/next`` in this process.

Each ``feed`` gives the text so far to the stream's ``score.stream.TextStream``, which cuts only the
text after the last returned word and scores only the target words completed since (their p(H) from
the detector's incremental judge: an encoder's view of the window before a word, a causal backbone's
cached window), so a call costs what its new words cost, not what the text before them does. A word is
complete when a boundary follows it, or ``final`` says the text is finished. The words of all calls
together are those of one ``Detector.score`` of the final text (``score/stream.py`` says where
``content``'s entities and a causal backbone's rounding can differ).
"""

from __future__ import annotations


class WordStream:
    """``feed(text_so_far, final=False)``: the words completed since the last call (``Detector.stream``)."""

    def __init__(self, service, threshold: float, since: int = 0, threads: int = 0):
        self.service, self.threshold, self.threads = service, threshold, threads
        self.scored = service.text_stream(threshold, since)
        self.text = ""
        self.finished = False

    @property
    def since(self) -> int:
        """Where the next call's words may start: the last returned word's end."""
        return self.scored.since

    @since.setter
    def since(self, at: int) -> None:
        self.scored.since = at

    def feed(self, text_so_far: str, final: bool = False) -> list[dict]:
        """The words of ``text_so_far`` completed since the last call (``final``: every word left), each
        ``{"word", "start", "end", "p", "flag"}`` with character offsets into the text (the word records
        of ``Detector.score``), as ``POST /score/next`` answers. ``text_so_far`` is the whole text, not
        the new chunk."""
        from hades_ray.detect.stable import torch_threads

        self._check(text_so_far)
        words = []
        if text_so_far.strip():
            with torch_threads(self.threads):
                words = self.scored.feed(text_so_far, final)
        self.text, self.finished = text_so_far, final
        return words

    def _check(self, text: str) -> None:
        from hades_ray.serve.scoring import RequestError

        if self.finished:
            raise ValueError("this stream got final=True already: start another with Detector.stream()")
        if not isinstance(text, str):
            raise ValueError(f"feed: text_so_far must be a string (got {type(text).__name__})")
        if self.text and text[: self.since] != self.text[: self.since]:
            raise ValueError(
                f"feed: give the whole text so far; its first {self.since} characters changed since the last call"
            )
        if text.strip():
            try:
                self.service.table([text])  # what score refuses (too long, ...), refused as score refuses it
            except RequestError as error:
                raise ValueError(f"feed: {error.reason.removeprefix('text: ')}") from None
