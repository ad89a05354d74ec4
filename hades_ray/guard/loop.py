"""Guarded sampling: every prompt of a batch advances one token per step, as in ``model.generate``;
when a row's word (hades_ray/detect/judged_words.py) ends, the online judge scores it, and a word at or above
the threshold is taken back and drawn again from the same distribution without the first tokens
already rejected there, up to ``max_retries`` times per position (hades_ray/guard/rows.py).

Taking a word back keeps the batch in step: its columns stay in the key/value cache but leave the
attention mask (as padding does), and the replacement's first token is drawn in the same step from
the distribution stored when the word began, so the row loses no step to the rollback. Position ids
skip those holes, so the text after a replacement sits where it would without the rejected word.
With nothing flagged every forward pass, processor and ``torch.multinomial`` call is the one
``generate`` makes, so the tokens are the same (tests/guard/test_guard.py checks this). Processors
that read the history (a repetition penalty, when the model's generation config sets one) also see
the rejected tokens still in ``input_ids``.

The judge (hades_ray/guard/judge.py) is asked once per step about every row whose word ended. A cached
judge keeps state per row; a word drawn again comes back to it with the same prefix, and it cuts its
cache back to there (hades_ray/detect/incremental.py), so both caches roll back to the word's start.

Rejections make rows finish at different steps, and a batch runs until its slowest row is done. With
``slots`` fewer than the prompts, a slot whose row is done takes the next prompt at once (continuous
batching): waiting prompts run through the generator ``slots`` at a time ahead of need, a prompt's
keys and values fill its slot's columns at the right edge of the batch's cache, its first token is drawn
from its prompt's scores in the same step (the slot loses no step), and the columns no row uses any
more are cut off the left edge. The tokens then depend on the slots as they depend on a batch's
composition with ``generate``: the same prompts, slots and seed give the same text. A cached judge needs no notice: a
row's new prompt shares no window prefix with the old one beyond identical tokens, whose keys and
values are the same.
"""

from __future__ import annotations

import contextlib
import inspect
from dataclasses import dataclass

import torch

from hades_ray.errors import UserError
from hades_ray.guard.growing_cache import growing_cache
from hades_ray.detect.row_caches import cache_of
from hades_ray.guard.rows import Row
from hades_ray.guard.sampling import Sampling, encode_prompts, end_token_ids, generation_config, logits_processors
from hades_ray.guard.text import TokenText


@dataclass(frozen=True)
class GuardSettings:
    threshold: float
    max_retries: int = 3
    slots: int = 0  # rows generated at once; a done row's slot takes the next prompt (0: all prompts at once)


@torch.inference_mode()
def guarded_generate(
    model, tokenizer, prompts: list[str], sampling: Sampling, judge, guard: GuardSettings, seed: int
) -> list[dict]:
    """Generate for every prompt (``guard.slots`` at a time), checking each word; ``judge.score_chunks``
    is called once per step with every row's finished word (``(row, prefix, chunk)``, the row being the
    slot; a resampled word comes again with the same prefix, which is how a cached judge rolls back).
    Returns per prompt: new tokens, text, scores, interventions."""
    config = generation_config(model, tokenizer, sampling)
    device = next(model.parameters()).device
    slots = len(prompts) if guard.slots <= 0 else min(guard.slots, len(prompts))
    enc = encode_prompts(tokenizer, prompts[:slots], device)
    ids, mask = enc["input_ids"], enc["attention_mask"]
    processors = logits_processors(model, config, ids)
    ends = end_token_ids(config)

    def new_row(prompt_ids: list[int]) -> Row:
        return Row(TokenText(tokenizer, prompt_ids), ends, sampling.max_new_tokens)

    rows = [new_row(r[m.bool()].tolist()) for r, m in zip(ids, mask)]
    # A judge reading the generator's own states (a probe on it: guard/probe_judge.py) keeps them per slot.
    reading = getattr(judge, "reading", None)
    with reading(model, rows) if reading else contextlib.nullcontext() as states:
        step = _Stepper(model, int(config.pad_token_id), mask.sum(dim=1).tolist(), device, states)
        refill = _Refill(step, tokenizer, prompts, slots, new_row, processors)
        judge.begin(slots)
        torch.manual_seed(seed)
        return _steps(ids, mask, rows, step, refill, judge, guard, sampling.max_new_tokens, len(prompts))


def _steps(ids, mask, rows, step, refill, judge, guard: GuardSettings, budget: int, prompts: int) -> list[dict]:
    """The prompts' forward, then a step per token until every prompt is done (``guarded_generate``)."""
    model, processors, slots = step.model, refill.processors, refill.slots
    cache = growing_cache(model)  # appends a step's columns in place, not by copying the cache
    out = model(input_ids=ids, attention_mask=mask, cache=cache, use_cache=True, **step.prefill_inputs(mask))
    if step.states is not None:
        step.states.prompts(list(range(slots)), mask)
    if slots < prompts:
        _layers(cache_of(out))  # a cache slots cannot refill fails before any token is drawn
    # Steps no run can need: each word position takes at most ``max_retries`` rejections, each of at most
    # ``budget`` tokens, and a rollback never reaches behind an accepted word; times the prompts one slot
    # can serve.
    bound = (budget * (1 + guard.max_retries * (budget + 2)) + 2) * (prompts - slots + 1)
    for _ in range(bound):
        if all(r.done or r.finishing for r in rows):  # nobody needs a token: draw none, as ``generate`` stops
            tokens, raw = [None] * len(rows), [None] * len(rows)
        else:
            raw = out.logits[:, -1].to(copy=True, dtype=torch.float32)
            tokens = _sample(processors, ids, raw)
        waiting = [i for i, row in enumerate(rows) if row.take(tokens[i], raw[i])]
        if waiting:
            verdicts = judge.score_chunks([(i, *rows[i].current_word()) for i in waiting])
            for i, scored in zip(waiting, verdicts):
                rows[i].decide(scored, guard.threshold, guard.max_retries)
            _redraw([i for i in waiting if rows[i].resampling], rows, processors, ids)
        ids, mask = refill.done_rows(rows, ids, mask, out)
        if all(r.done for r in rows):  # no forward for a step nobody takes
            return refill.results
        ids, mask, out = step.extend(rows, ids, mask, out)
    raise RuntimeError("guarded generation did not finish: a bug, please report it")


def _sample(processors, ids: torch.Tensor, raw: torch.Tensor) -> list[int]:
    """One token per row of ``raw`` scores, through the processors, as ``generate`` samples."""
    return torch.multinomial(torch.softmax(processors(ids, raw), dim=-1), num_samples=1).squeeze(1).tolist()


def _redraw(taken_back: list[int], rows: list[Row], processors, ids: torch.Tensor) -> None:
    """Each word taken back this step gets its replacement's first token now, from the scores stored
    when the word began, so the row feeds it this same step (no forward runs for it)."""
    if not taken_back:
        return
    raw = torch.stack([rows[i].start_logits for i in taken_back])
    for k, i in enumerate(taken_back):
        raw[k, rows[i].bans] = float("-inf")
    for i, token in zip(taken_back, _sample(processors, ids[taken_back], raw)):
        rows[i].take_replacement(token)


class _Stepper:
    """Appends each step's tokens to the batch (a masked pad for a row with none) and runs the model."""

    def __init__(self, model, pad: int, prompt_lengths: list[int], device, states=None):
        self.model, self.pad, self.lengths, self.device = model, pad, prompt_lengths, device
        self.states = states  # GeneratorStates, where the judge reads the generator's own states
        takes = inspect.signature(model.forward).parameters
        self.takes_positions = "position_ids" in takes
        # ``generate`` asks a model that can for the last position's scores only on the prompt's forward
        # (``GenerationMixin._supports_logits_to_keep``): the same matmul, and none over every prompt token.
        self.last_logits = {"logits_to_keep": 1} if "logits_to_keep" in takes else {}

    def prefill_inputs(self, mask: torch.Tensor) -> dict:
        """The prompts' forward's extra inputs as ``generate`` makes them: position ids counted from each
        prompt's first real token (``GenerationMixin._prepare_position_ids_for_generation``) when the model
        takes them, and only the last position's scores."""
        inputs = dict(self.last_logits)
        if self.takes_positions:
            inputs["position_ids"] = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)
        return inputs

    def extend(self, rows: list[Row], ids: torch.Tensor, mask: torch.Tensor, out):
        column = ids.shape[1]
        for i, row in enumerate(rows):
            if row.dropped:  # a rejected word leaves the text, its cache columns stay as holes
                mask[i, row.dropped] = 0
            if row.feed is not None:
                row.columns.append(column)
        feed = torch.tensor([[self.pad if r.feed is None else r.feed] for r in rows], device=self.device)
        keep = torch.tensor([[int(r.feed is not None)] for r in rows], device=self.device, dtype=mask.dtype)
        ids, mask = torch.cat([ids, feed], dim=1), torch.cat([mask, keep], dim=1)
        positions = {}
        if self.takes_positions:  # a token's position counts the text before it: no pads, no holes
            at = [[n + max(len(r.kept) - 1, 0)] for n, r in zip(self.lengths, rows)]
            positions = {"position_ids": torch.tensor(at, device=self.device)}
        out = self.model(input_ids=feed, attention_mask=mask, cache=cache_of(out), use_cache=True, **positions)
        if self.states is not None:
            self.states.fed({i: len(r.text.prompt_ids) + len(r.kept) for i, r in enumerate(rows) if r.feed is not None})
        return ids, mask, out

    def place(self, slots: list[int], new_ids, new_mask, ids, mask, cache, prompt_kv):
        """Put new prompts' tokens and keys/values in ``slots`` at the batch's right edge (the batch is
        padded on the left first where a prompt is wider than it); the slots' old columns are masked."""
        width, extra = ids.shape[1], max(0, new_ids.shape[1] - ids.shape[1])
        if extra:
            ids = torch.cat([ids.new_full((ids.shape[0], extra), self.pad), ids], dim=1)
            mask = torch.cat([mask.new_zeros((mask.shape[0], extra)), mask], dim=1)
            for layer in _layers(cache):
                pad = layer.keys.new_zeros((*layer.keys.shape[:2], extra, layer.keys.shape[3]))
                layer.keys, layer.values = torch.cat([pad, layer.keys], dim=2), torch.cat([pad, layer.values], dim=2)
            width += extra
        at = width - new_ids.shape[1]
        index = torch.tensor(slots, device=ids.device)
        ids[index], mask[index] = self.pad, 0
        ids[index, at:], mask[index, at:] = new_ids, new_mask
        for layer, (keys, values) in zip(_layers(cache), prompt_kv):
            layer.keys[index, :, at:], layer.values[index, :, at:] = keys, values
        for i, length in zip(slots, new_mask.sum(dim=1).tolist()):
            self.lengths[i] = length
        return ids, mask

    def trim(self, rows: list[Row], ids, mask, cache):
        """Cut the left columns no row attends to any more (they belonged to prompts already done)."""
        used = mask.any(dim=0).nonzero()
        cut = int(used[0]) if len(used) else 0
        if not cut:
            return ids, mask
        for layer in _layers(cache):
            layer.keys, layer.values = layer.keys[:, :, cut:], layer.values[:, :, cut:]
        for row in rows:
            row.columns, row.dropped = [c - cut for c in row.columns], [c - cut for c in row.dropped]
        return ids[:, cut:], mask[:, cut:]


def _layers(cache) -> list:
    """A dynamic key/value cache's layers (``keys``/``values`` of ``[batch, heads, columns, dim]``)."""
    layers = getattr(cache, "layers", None)
    if not layers or not all(hasattr(layer, "keys") for layer in layers):
        raise UserError("guard.slots needs a generator with a dynamic key/value cache; set guard.slots to 0")
    return layers


class _Refill:
    """Continuous batching: a done row's result is kept and its slot takes the next prompt, if any; waiting
    prompts keep their keys, values and last scores (one forward per ``slots`` of them) until a slot does."""

    def __init__(self, step: _Stepper, tokenizer, prompts: list[str], slots: int, new_row, processors):
        self.step, self.tokenizer, self.prompts, self.slots = step, tokenizer, prompts, slots
        self.new_row, self.processors = new_row, processors
        self.owner = list(range(slots))  # the prompt each slot is writing
        self.queue = list(range(slots, len(prompts)))
        self.ready: list[tuple] = []  # (prompt, ids, mask, keys and values per layer, last scores)
        self.results: list[dict | None] = [None] * len(prompts)
        self.waiting_states: dict[int, torch.Tensor] = {}  # prompt -> its states, for a judge reading them

    def done_rows(self, rows: list[Row], ids, mask, out):
        """Keep the results of rows just done; give their slots the next prompts and draw each one's first
        token from its prompt's scores, so it is fed this step. Returns the batch."""
        freed = []
        for i, row in enumerate(rows):
            if row.done and self.owner[i] is not None and self.results[self.owner[i]] is None:
                self.results[self.owner[i]] = _result(row)
                self.owner[i] = None
                if self.queue or self.ready:
                    freed.append(i)
        if not freed:
            return ids, mask
        scores = []
        for i in freed:
            k, new_ids, new_mask, new_kv, last = self._next(ids.device)
            ids, mask = self.step.place([i], new_ids, new_mask, ids, mask, cache_of(out), new_kv)
            rows[i] = self.new_row(new_ids[0, new_mask[0].bool()].tolist())
            if self.step.states is not None:
                self.step.states.placed(i, self.waiting_states.pop(k))
            self.owner[i] = k
            scores.append(last)
        ids, mask = self.step.trim(rows, ids, mask, cache_of(out))
        raw = torch.stack(scores)
        for i, token, row_raw in zip(freed, _sample(self.processors, ids[freed], raw), raw):
            rows[i].take(token, row_raw)
        if any(rows[i].done for i in freed):  # a prompt whose first token ends it: its slot goes on
            return self.done_rows(rows, ids, mask, out)
        return ids, mask

    def _next(self, device) -> tuple:
        """The next waiting prompt, run through the generator (with up to ``slots`` others) if not yet."""
        if not self.ready:
            batch, self.queue = self.queue[: self.slots], self.queue[self.slots :]
            enc = encode_prompts(self.tokenizer, [self.prompts[k] for k in batch], device)
            new_ids, new_mask = enc["input_ids"], enc["attention_mask"]
            prompt_out = self.step.model(
                input_ids=new_ids, attention_mask=new_mask, use_cache=True, **self.step.prefill_inputs(new_mask)
            )
            layers = _layers(cache_of(prompt_out))
            for j, k in enumerate(batch):
                pad = int((new_mask[j] == 0).sum())  # its left padding stays behind: it would widen the batch
                kv = [(layer.keys[j : j + 1, :, pad:], layer.values[j : j + 1, :, pad:]) for layer in layers]
                last = prompt_out.logits[j, -1].to(dtype=torch.float32, copy=True)  # not a view of all scores
                if self.step.states is not None:
                    self.waiting_states[k] = self.step.states.waiting(j, pad)
                self.ready.append((k, new_ids[j : j + 1, pad:], new_mask[j : j + 1, pad:], kv, last))
        return self.ready.pop(0)


def _result(row: Row) -> dict:
    return {
        "tokens": list(row.kept),
        "generation": row.text.generated(row.kept),
        "scores": row.scores,
        "interventions": row.interventions,
        "emitted_flagged": row.emitted_flagged,
    }
