"""REPLACE: fill [MASK] positions left to right with a masked LM, one position per step.

"[MASK] [MASK] [MASK] -> [A] [MASK] [MASK] -> [A] [B] [MASK] -> [A] [B] [C]": at each step every
sequence that still has a mask fills its leftmost one, so a batch of all candidates of many texts
costs one forward per step. The original token is removed from the distribution at each position.
Draws come from one generator per candidate, so a sequence's result never depends on its batch.

A replacement is a word, not debris (``whole_words``, on by default): each position is filled with
a token of the original's shape, so the text keeps its layout. Punctuation inside a span (the
apostrophe and "s" of "Night's", the comma of "1,000") stays as it was and costs no model step;
every other position takes no punctuation; a position that continued a word takes a word piece and
one that began a word takes a whole-word token; no word start repeats the token just before it, and
a one-token word does not repeat the word after it.
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from hades_ray.models.fixed_rows import fill_rows, mlm_logits_at
from hades_ray.perturb.packing import Packing, body_rows, head_rows, model_positions, packing_of
from hades_ray.perturb.settings import ReplaceConfig
from hades_ray.text.words import is_word

NEG_INF = float("-inf")
SPAN_START, CONTINUATION, INNER_WORD = 0, 1, 2  # what the original token at a position was
CLITICS = frozenset(["'", "\u2019", "s", "t", "d", "m", "ll", "re", "ve"])


@dataclass
class MaskedSequence:
    input_ids: list[int]  # with [MASK] at every position to fill
    positions: list[int]  # ascending
    original_ids: list[int]  # the original token at each position
    span_starts: frozenset[int]  # positions that begin a word span
    rng: np.random.Generator


@dataclass
class VocabularyBans:
    """Boolean vectors over the vocabulary, and per position kind the tokens it may not take."""

    anywhere: torch.Tensor  # special, unused and out-of-vocabulary ids
    continuation: torch.Tensor  # tokens that continue a word (WordPiece "##", BPE without a space marker)
    punctuation: torch.Tensor  # tokens with a character that is neither a letter nor a digit
    clitic: torch.Tensor  # apostrophes and the "s", "t", "ll"... that follow one ("Night's", "don't")
    by_kind: torch.Tensor  # [3, vocab]: bans at SPAN_START, CONTINUATION and INNER_WORD positions
    whole_words: bool

    def to(self, device) -> VocabularyBans:
        names = ("anywhere", "continuation", "punctuation", "clitic", "by_kind")
        return dataclasses.replace(self, **{name: getattr(self, name).to(device) for name in names})


def _token_shape(token: str | None, prefixed_space: bool) -> tuple[str, bool]:
    """(the token's text without markers, whether it continues a word)."""
    token = token or ""
    if token.startswith("##"):
        return token[2:], True
    if token[:1] in ("Ġ", "▁"):
        return token[1:], False
    return token, prefixed_space  # byte-level BPE and SentencePiece: no space marker = inside a word


def vocabulary_bans(
    tokenizer, vocab_size: int, stop_words: frozenset[str] | None = None, whole_words: bool = True
) -> VocabularyBans:
    """The bans REPLACE applies. Special and unused tokens never fill a mask, and (given
    ``stop_words``) a span never starts with a stop word. ``whole_words`` adds the word-shape rules of
    the module docstring, a span never starting with a word piece or punctuation among them;
    ``whole_words=False`` and no ``stop_words`` is our reading of the paper's fill (§3.2 names no bans
    besides the original token's removal)."""
    stop_words = stop_words or frozenset()
    tokens = tokenizer.convert_ids_to_tokens(list(range(min(vocab_size, len(tokenizer)))))
    space_marked = any(t and t[:1] in ("Ġ", "▁") for t in tokens[:5000])
    special = set(tokenizer.all_special_ids)
    # Per-token flags in Python lists, one tensor each at the end: an element-wise tensor write per
    # token took about 1 s of every actor start on a 30k vocabulary (0.1 s this way).
    flags: dict[str, list[bool]] = {k: [] for k in ("anywhere", "continuation", "punctuation", "stop", "clitic")}
    for index, token in enumerate(tokens):
        text, continues = _token_shape(token, space_marked)
        flags["anywhere"].append(
            index in special or token is None or text.startswith(("[unused", "<unused")) or not text
        )
        flags["continuation"].append(continues)
        flags["punctuation"].append(not is_word(text))  # a vowel sign is no punctuation
        lowered = text.lower()
        flags["stop"].append(lowered in stop_words)
        flags["clitic"].append(lowered in CLITICS)

    def over_vocabulary(name: str, beyond: bool) -> torch.Tensor:
        """The flag as a vector over ``vocab_size`` ids; ids past the tokenizer's take ``beyond``."""
        vector = torch.full((vocab_size,), beyond, dtype=torch.bool)
        vector[: len(tokens)] = torch.tensor(flags[name], dtype=torch.bool)
        return vector

    anywhere = over_vocabulary("anywhere", True)  # ids past the tokenizer's vocabulary stay banned
    punctuation = over_vocabulary("punctuation", True)
    continuation, stop, clitic = (over_vocabulary(name, False) for name in ("continuation", "stop", "clitic"))
    if whole_words:
        shaped = anywhere | punctuation
        at_start = shaped | continuation | stop
        by_kind = torch.stack([at_start, shaped | ~continuation, shaped | continuation])
    else:
        at_start = anywhere | stop
        by_kind = torch.stack([at_start, anywhere, anywhere])
    return VocabularyBans(anywhere, continuation, punctuation, clitic, by_kind, whole_words)


def choose_tokens(logits: torch.Tensor, uniforms: np.ndarray, config: ReplaceConfig) -> torch.Tensor:
    """One token per row from banned-out logits by the configured decoding (inverse-CDF sampling)."""
    if config.decoding == "greedy":
        return logits.argmax(dim=-1)
    logits = logits.double() / config.temperature
    if config.decoding == "top_k":
        values, indices = logits.topk(min(config.top_k, logits.shape[-1]), dim=-1)
        probs = values.softmax(dim=-1)
    else:
        values, indices = logits.sort(dim=-1, descending=True)
        probs = values.softmax(dim=-1)
        keep = (probs.cumsum(dim=-1) - probs) < config.top_p  # the smallest prefix reaching top_p
        probs = torch.where(keep, probs, torch.zeros_like(probs))
        probs = probs / probs.sum(dim=-1, keepdim=True)
    cdf = probs.cumsum(dim=-1)
    u = torch.as_tensor(uniforms, dtype=cdf.dtype).unsqueeze(-1) * cdf[:, -1:]
    picks = torch.searchsorted(cdf, u).clamp_(max=probs.shape[-1] - 1)
    return indices.gather(-1, picks).squeeze(-1)


@dataclass
class _Plan:
    """Which of a sequence's positions the model fills, and what kind of token each one was."""

    steps: list[int]  # indices into ``positions``
    kinds: list[int]


def _is_apostrophe(token_id: int, bans: VocabularyBans) -> bool:
    return bool(bans.clitic[token_id]) and bool(bans.punctuation[token_id])


def _plan(seq: MaskedSequence, bans: VocabularyBans) -> _Plan:
    steps, kinds, starting = [], [], False
    for index, (position, original) in enumerate(zip(seq.positions, seq.original_ids)):
        starting = starting or position in seq.span_starts
        after_apostrophe = index > 0 and seq.positions[index - 1] == position - 1 and bool(bans.clitic[original])
        punctuation = bool(bans.punctuation[original]) and not bool(bans.anywhere[original])  # [UNK] is replaced
        if bans.whole_words and (punctuation or after_apostrophe and _is_apostrophe(seq.original_ids[index - 1], bans)):
            continue  # punctuation inside a span ("$5", "Night's") and the clitic after it stay as they were
        if starting:
            kind = SPAN_START
        elif bans.whole_words and bool(bans.continuation[original]):
            kind = CONTINUATION
        else:
            kind = INNER_WORD
        steps.append(index)
        kinds.append(kind)
        starting = False
    return _Plan(steps, kinds)


def model_steps(seq: MaskedSequence, bans: VocabularyBans) -> int:
    """How many of a sequence's masked positions take a model step (kept punctuation takes none)."""
    return len(_plan(seq, bans).steps)


def step_chunks(step_counts: list[int], rows_per_forward: int) -> Iterator[list[tuple[int, int]]]:
    """Every forward ``fill_masks`` makes, in order, as (row, step) pairs. Rows wait in a queue in
    input order; a forward takes the first ``rows_per_forward`` of them, each at its next step, and a
    row with steps left joins the back again, so forwards stay full until the last rows. A row's fills
    depend only on its own forwards, so the schedule does not change them. A pure function of the
    step counts, so the planner counts the very same forwards."""
    queue = deque((row, 0) for row, count in enumerate(step_counts) if count > 0)
    while queue:
        forward = [queue.popleft() for _ in range(min(rows_per_forward, len(queue)))]
        yield forward
        queue.extend((row, step + 1) for row, step in forward if step + 1 < step_counts[row])


def forward_shapes(
    sequences: list[MaskedSequence], bans: VocabularyBans, packing: Packing | None = None
) -> list[tuple[int, int]]:
    """(rows, width) of each forward ``fill_masks`` would make for ``sequences`` packed as ``packing``
    (exact within the default budget when not given), without a model."""
    packing = packing or Packing()
    lengths = [len(seq.input_ids) for seq in sequences]
    width = packing.width(max(lengths))
    counts = [model_steps(seq, bans) for seq in sequences]
    shapes = []
    for forward in step_chunks(counts, packing.rows(width)):
        span = width if packing.fixed_rows else max(lengths[row] for row, _ in forward)
        shapes.append((body_rows(len(forward), packing, span), span))  # filler rows included
    return shapes


@torch.inference_mode()
def fill_masks(
    model,
    sequences: list[MaskedSequence],
    config: ReplaceConfig,
    bans: VocabularyBans,
    pad_id: int,
    timings: dict | None = None,
) -> list[list[int]]:
    """Token ids chosen for each sequence's positions, left to right, in forwards packed as
    ``config`` says (hades_ray/perturb/packing.py); ``timings["forward"]`` accumulates the seconds
    spent inside model forwards."""
    device = next(model.parameters()).device
    packing = packing_of(config, device.type, model_positions(model))
    on_device = bans.to(device)
    width = packing.width(max(len(s.input_ids) for s in sequences))
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq.input_ids)] = torch.tensor(seq.input_ids)
    lengths = torch.tensor([len(s.input_ids) for s in sequences])
    chosen: list[list[int]] = [list(s.original_ids) for s in sequences]  # kept positions stay as they were
    plans = [_plan(seq, bans) for seq in sequences]
    for row, seq in enumerate(sequences):
        for index in set(range(len(seq.positions))) - set(plans[row].steps):
            ids[row, seq.positions[index]] = seq.original_ids[index]
    for forward in step_chunks([len(p.steps) for p in plans], packing.rows(width)):
        rows = [r for r, _ in forward]
        cols = [sequences[r].positions[plans[r].steps[s]] for r, s in forward]
        banned = [_banned_ids(ids[r], sequences[r], plans[r], s, col, bans) for (r, s), col in zip(forward, cols)]
        span = width if packing.fixed_rows else int(lengths[rows].max())
        attention = (torch.arange(span).unsqueeze(0) < lengths[rows].unsqueeze(1)).long()
        batch, _ = fill_rows({"ids": ids[rows, :span], "mask": attention}, body_rows(len(rows), packing, span))
        started = time.perf_counter()
        logits = mlm_logits_at(
            model,
            batch["ids"].to(device),
            batch["mask"].to(device),
            torch.arange(len(rows), device=device),
            torch.tensor(cols, device=device),
            head_rows(len(rows), packing, span),
        ).float()
        if device.type == "cuda":
            torch.cuda.synchronize()
        if timings is not None:
            timings["forward"] = timings.get("forward", 0.0) + time.perf_counter() - started
        kinds = torch.tensor([plans[r].kinds[s] for r, s in forward], device=device)
        logits = logits[:, : on_device.anywhere.shape[0]].masked_fill(on_device.by_kind[kinds], NEG_INF)
        flat_rows = [slot for slot, tokens in enumerate(banned) for _ in tokens]
        flat_ids = [token for tokens in banned for token in tokens]
        logits[torch.tensor(flat_rows, device=device), torch.tensor(flat_ids, device=device)] = NEG_INF
        uniforms = np.array([sequences[r].rng.random() for r in rows])
        for (row, step), col, token in zip(forward, cols, choose_tokens(logits, uniforms, config).tolist()):
            ids[row, col] = token
            chosen[row][plans[row].steps[step]] = token
    return chosen


def _banned_ids(ids: torch.Tensor, seq: MaskedSequence, plan: _Plan, step: int, col: int, bans) -> list[int]:
    """The original token, and with ``whole_words`` at a word start the tokens that would repeat a
    neighbouring word: the token just before, and the unmasked word just after ("he he", "the the")."""
    banned = [seq.original_ids[plan.steps[step]]]
    if not bans.whole_words or plan.kinds[step] == CONTINUATION:
        return banned
    if col > 0:
        banned.append(int(ids[col - 1]))
    if col + 1 < len(seq.input_ids) and (col + 1) not in seq.positions:
        after = int(ids[col + 1])
        if not bool(bans.continuation[after]):
            banned.append(after)
    return banned
