"""Scoring a text as it is generated: ``POST /score/next`` in this process.

Each ``feed`` scores the whole text so far with the score job's stages (online, a word sees only the
text before it, so a word's p(H) does not change as text follows it) and returns, with
``serve.scoring.next_words``, the target words that start at or after where the last call's words
ended and are complete: a boundary follows them, or ``final`` says the text is finished. With
``words="all"``, the words of all calls together are those of one ``Detector.score`` of the final
text (with ``content``, a named entity can grow as text follows it, so it is scored whole once the
text is final).
"""

from __future__ import annotations


class WordStream:
    """``feed(text_so_far, final=False)``: the words completed since the last call (``Detector.stream``)."""

    def __init__(self, service, threshold: float, since: int = 0):
        self.service, self.threshold = service, threshold
        self.since = since  # where the next call's words may start: the last returned word's end
        self.text = ""
        self.finished = False

    def feed(self, text_so_far: str, final: bool = False) -> list[dict]:
        """The words of ``text_so_far`` completed since the last call (``final``: every word left), each
        ``{"word", "start", "end", "p", "flag"}`` with character offsets into the text (the word records
        of ``Detector.score``), as ``POST /score/next`` answers. ``text_so_far`` is the whole text, not
        the new chunk."""
        from hades_ray.serve.scoring import next_words

        self._check(text_so_far)
        words = []
        if text_so_far.strip():
            (rows,) = self.service.score_tables([self.service.table([text_so_far])])
            answer = next_words(rows[0], self.threshold, self.since, final)
            self.since, words = answer["next"], answer["words"]
        self.text, self.finished = text_so_far, final
        return words

    def _check(self, text: str) -> None:
        if self.finished:
            raise ValueError("this stream got final=True already: start another with Detector.stream()")
        if not isinstance(text, str):
            raise ValueError(f"feed: text_so_far must be a string (got {type(text).__name__})")
        if len(text) > self.service.max_chars:
            raise ValueError(f"feed: text_too_long (over {self.service.max_chars} characters)")
        if self.text and text[: self.since] != self.text[: self.since]:
            raise ValueError(
                f"feed: give the whole text so far; its first {self.since} characters changed since the last call"
            )
