"""``Detector.stopping_criteria``: stop a row of ``model.generate`` once a word it wrote is flagged.

``generate`` calls the criteria after every new token with the whole ``input_ids``. A call whose batch
is not the last call's plus one column starts a new generation: its prompts are all but the last
column. Each row's continuation is decoded as the guard decodes it (``guard/text.py``: after the
prompt's tokens, special tokens skipped), and the prompt and continuation go to the row's
``WordStream``, which returns the words completed since the last step with their p(H). The first
word at or above the threshold stops the row; the prompt's own words are never judged (a word the
prompt ends inside of is judged whole, as the guard judges it).
"""

from __future__ import annotations

import torch
from transformers import StoppingCriteria

from hades_ray.guard.text import TokenText
from hades_ray.detect.judged_words import word_start


class _Row:
    def __init__(self, stream, tokenizer, prompt_ids: list[int]):
        self.stream, self.text, self.started = stream, TokenText(tokenizer, prompt_ids), False


class HallucinationStop(StoppingCriteria):
    """Stops each row at its first flagged word; ``stopped[i]`` is that word of row ``i``
    (``{"word", "start", "end", "p", "flag", "new_tokens"}``: the stream's word record, offsets in the row's
    prompt + continuation text) or None, and ``words[i]`` every word judged in row ``i``."""

    def __init__(self, stream, tokenizer):
        self.template, self.tokenizer = stream, tokenizer
        self.rows: list[_Row] = []
        self.stopped: list[dict | None] = []
        self.words: list[list[dict]] = []
        self._width = -1

    def __call__(self, input_ids: torch.LongTensor, scores=None, **kwargs) -> torch.BoolTensor:
        if input_ids.shape[0] != len(self.rows) or input_ids.shape[1] != self._width + 1:
            self._begin(input_ids)
        self._width = input_ids.shape[1]
        for i, row in enumerate(self.rows):
            if self.stopped[i] is None:
                self._step(i, row, input_ids[i, self._prompt_width :].tolist())
        return torch.tensor([s is not None for s in self.stopped], dtype=torch.bool, device=input_ids.device)

    def _begin(self, input_ids: torch.LongTensor) -> None:
        pad = self.tokenizer.pad_token_id
        self._prompt_width = input_ids.shape[1] - 1
        self.rows, self.stopped, self.words = [], [None] * input_ids.shape[0], [[] for _ in range(input_ids.shape[0])]
        for ids in input_ids[:, :-1].tolist():
            while ids and ids[0] == pad:  # left padding is no part of the prompt
                ids = ids[1:]
            stream = type(self.template)(self.template.service, self.template.threshold, threads=self.template.threads)
            self.rows.append(_Row(stream, self.tokenizer, ids))

    def _step(self, i: int, row: _Row, new_ids: list[int]) -> None:
        text = row.text.prompt + row.text.generated(new_ids)
        if not row.started:  # the first judged word is the one the prompt ends in, if any
            row.stream.since = word_start(text, len(row.text.prompt), row.stream.service.language)
            row.started = True
        row.stream.text = text  # each step's decoding is the text: a clean-up may retouch what came before
        for word in row.stream.feed(text):
            self.words[i].append(word)
            if word["flag"]:
                self.stopped[i] = word | {"new_tokens": len(new_ids)}
                return
