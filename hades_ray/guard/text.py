"""Generated tokens as text: what each new token adds, and where a word starts, as the tokenizer decodes.

Decoding with the prompt's tokens in front makes the answer the same for every tokenizer family:
byte-level BPE marks a word's start with a space inside the token, WordPiece by the absence of
``##``, and both show as a space in the decoded text.
"""

from __future__ import annotations


class TokenText:
    """Decodes one prompt's continuation; ``kept`` is the list of generated token ids so far."""

    MEMO = 64  # continuations kept decoded: each step asks again about the texts of the last few
    CONTEXT = 8  # prompt tokens decoded in front of the continuation, where they stand for the whole prompt

    def __init__(self, tokenizer, prompt_ids: list[int]):
        self.tokenizer, self.prompt_ids = tokenizer, list(prompt_ids)
        # ``decode`` runs ``to_py_obj`` over its argument and then ``_decode`` on one flat list: the ids here
        # are that list already, and the conversion cost as much as the decoding (per token, per row).
        self._decode_list = getattr(tokenizer, "_decode", None) or tokenizer.decode
        self.prompt = self._decode(self.prompt_ids)
        self._memo: dict[tuple[int, ...], str] = {}
        # Every step decodes each row's continuation once, after the prompt. The prompt's last few tokens
        # give the same continuation text (a decoder joins and cleans up neighbouring tokens only) when the
        # prompt's text ends with theirs and they start on a whole character: decoding them instead of the
        # whole prompt makes a step's decoding cost the continuation's length, not the prompt's.
        self.context_ids, self.context_text = self.prompt_ids, self.prompt
        if len(self.prompt_ids) > self.CONTEXT:
            tail = self.prompt_ids[-self.CONTEXT :]
            tail_text = self._decode(tail)
            if tail_text and self.prompt.endswith(tail_text) and not tail_text.startswith("\ufffd"):
                self.context_ids, self.context_text = tail, tail_text

    def _decode(self, ids: list[int]) -> str:
        return self._decode_list(ids, skip_special_tokens=True)

    def generated(self, kept: list[int]) -> str:
        """The continuation's text (the prompt's decoded text is its prefix)."""
        key = tuple(kept)
        if key not in self._memo:
            if len(self._memo) >= self.MEMO:
                self._memo.clear()
            full, context = self._decode(self.context_ids + list(kept)), self.context_text
            self._memo[key] = full[len(context) :] if full.startswith(context) else self._decode(list(kept))
        return self._memo[key]

    def prompt_ends(self) -> list[int]:
        """Each prompt token's end in the decoded prompt (each prefix decoded: a token's characters are what
        the tokenizer shows once the token is there)."""
        return [len(self._decode(self.prompt_ids[: k + 1])) for k in range(len(self.prompt_ids))]

    def end(self, kept: list[int]) -> int:
        """Where the text of the prompt and ``kept`` ends: the last kept token's end in it."""
        return len(self.prompt) + len(self.generated(kept))

    def piece(self, kept: list[int], token: int) -> str:
        """The text ``token`` adds after ``kept``."""
        before, after = self.generated(kept), self.generated([*kept, token])
        return after[len(before) :] if after.startswith(before) else self._decode([token])

    def split(self, kept: list[int], start: int) -> tuple[str, str, int]:
        """(prompt and text before ``kept[start]``, the text of ``kept[start:]``, where that text starts
        in the continuation)."""
        before, whole = self.generated(kept[:start]), self.generated(kept)
        chunk = whole[len(before) :] if whole.startswith(before) else self._decode(list(kept[start:]))
        return self.prompt + before, chunk, len(before)
