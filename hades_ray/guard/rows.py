"""One prompt's state in the guarded loop, and what it does with each sampled token and verdict.

``kept`` are the generated tokens still in the text, ``columns`` their key/value-cache columns and
``word_start`` the index in ``kept`` where the word being written begins. A word is judged when it
ends: the next token starts a new word, the end token comes, or the token budget is spent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from hades_ray.guard.judge import chunk_p
from hades_ray.guard.text import TokenText
from hades_ray.detect.judged_words import starts_with_space


@dataclass
class Row:
    text: TokenText
    ends: set[int]
    budget: int
    kept: list[int] = field(default_factory=list)
    columns: list[int] = field(default_factory=list)
    word_start: int = 0
    start_logits: torch.Tensor | None = None  # the distribution the current word's first token came from
    bans: list[int] = field(default_factory=list)  # first tokens rejected at ``word_start``
    rejections: list[dict] = field(default_factory=list)  # rejected at ``word_start``, awaiting a replacement
    resampling: bool = False
    finishing: bool = False
    done: bool = False
    follow: int | None = None  # the token that ended the word under judgement, appended if it passes
    follow_logits: torch.Tensor | None = None
    feed: int | None = None  # the token this step appends (None: a masked pad)
    dropped: list[int] = field(default_factory=list)  # cache columns taken out of the text this step
    interventions: list[dict] = field(default_factory=list)
    scores: list[dict] = field(default_factory=list)
    emitted_flagged: int = 0

    def take(self, token: int, logits: torch.Tensor) -> bool:
        """Handle a sampled token; True when the word before it must be judged first."""
        self.feed, self.dropped = None, []
        if self.done:
            return False
        if self.finishing:
            self.follow = None
            return True
        if len(self.kept) > self.word_start and (
            token in self.ends or starts_with_space(self.text.piece(self.kept, token))
        ):
            self.follow, self.follow_logits = token, logits
            return True
        if len(self.kept) == self.word_start:
            self.start_logits = logits.clone()
        self._append(token)
        return False

    def take_replacement(self, token: int) -> None:
        """The first token of the word drawn again where one was just taken back (the cache columns
        ``_reject`` dropped stay dropped this step)."""
        self.resampling = False
        self._append(token)

    def current_word(self) -> tuple[str, str]:
        prefix, chunk, _ = self.text.split(self.kept, self.word_start)
        return prefix, chunk

    def decide(self, scored: list[dict], threshold: float, max_retries: int) -> None:
        """Take the judged word back (flagged, retries left) or keep it and go on."""
        p = chunk_p(scored)
        flagged = p is not None and p >= threshold
        _, chunk, offset = self.text.split(self.kept, self.word_start)
        if flagged and len(self.rejections) < max_retries:
            self._reject(chunk, p)
            return
        self.scores += [{**w, "start": offset + w["start"], "end": offset + w["end"]} for w in scored]
        self.emitted_flagged += int(flagged)
        self._close(chunk, p, offset, flagged)
        if self.finishing:
            self.done = True
        elif self.follow in self.ends:
            self._append(self.follow)
        else:
            self.word_start, self.start_logits = len(self.kept), self.follow_logits.clone()
            self._append(self.follow)

    def _reject(self, chunk: str, p: float) -> None:
        self.rejections.append(
            {"token_position": self.word_start, "attempt": len(self.rejections) + 1, "rejected": chunk.strip()}
            | {"p_rejected": p}
        )
        self.bans.append(self.kept[self.word_start])
        self.dropped = self.columns[self.word_start :]
        del self.kept[self.word_start :], self.columns[self.word_start :]
        self.resampling, self.finishing = True, False

    def _close(self, chunk: str, p: float | None, offset: int, flagged: bool) -> None:
        """Record each rejection at this position with what finally replaced it."""
        start = offset + len(chunk) - len(chunk.lstrip())
        for rejection in self.rejections:
            self.interventions.append(
                rejection
                | {"replacement": chunk.strip(), "p_replacement": p, "replacement_flagged": flagged}
                | {"char_start": start, "char_end": offset + len(chunk.rstrip())}
            )
        self.rejections, self.bans = [], []

    def _append(self, token: int) -> None:
        self.kept.append(token)
        self.feed = token
        if token in self.ends:
            if self.rejections:  # the word was replaced by the end of the text
                self._close("", None, len(self.text.generated(self.kept)), False)
            self.done = True
        elif len(self.kept) >= self.budget:
            self.finishing = True
