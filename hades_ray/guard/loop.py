"""Guarded sampling: every prompt of a batch advances one token per step, as in ``model.generate``;
when a row's word (hades_ray/guard/words.py) ends, the online judge scores it, and a word at or above
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
cache back to there (hades_ray/guard/causal_judge.py), so both caches roll back to the word's start.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import torch

from hades_ray.guard.judge_cache import cache_of
from hades_ray.guard.rows import Row
from hades_ray.guard.sampling import Sampling, encode_prompts, end_token_ids, generation_config, logits_processors
from hades_ray.guard.text import TokenText


@dataclass(frozen=True)
class GuardSettings:
    threshold: float
    max_retries: int = 3


def _step_bound(budget: int, retries: int) -> int:
    """Steps no run can need: each word position takes at most ``retries`` rejections, each of at most
    ``budget`` tokens, and a rollback never reaches behind an accepted word."""
    return budget * (1 + retries * (budget + 2)) + 2


@torch.no_grad()
def guarded_generate(
    model, tokenizer, prompts: list[str], sampling: Sampling, judge, guard: GuardSettings, seed: int
) -> list[dict]:
    """Generate for every prompt at once, checking each word; ``judge.score_chunks`` is called once
    per step with every row's finished word (``(row, prefix, chunk)``; a resampled word comes again with
    the same prefix, which is how a cached judge rolls back). Returns per prompt: new tokens, text,
    scores, interventions."""
    config = generation_config(model, tokenizer, sampling)
    device = next(model.parameters()).device
    enc = encode_prompts(tokenizer, prompts, device)
    ids, mask = enc["input_ids"], enc["attention_mask"]
    processors = logits_processors(model, config, ids)
    rows = [
        Row(TokenText(tokenizer, r[m.bool()].tolist()), end_token_ids(config), sampling.max_new_tokens)
        for r, m in zip(ids, mask)
    ]
    step = _Stepper(model, int(config.pad_token_id), mask.sum(dim=1).tolist(), device)
    judge.begin(len(prompts))
    torch.manual_seed(seed)
    out = model(input_ids=ids, attention_mask=mask, use_cache=True, **step.prompt_positions(mask))
    for _ in range(_step_bound(sampling.max_new_tokens, guard.max_retries)):
        if all(r.done for r in rows):
            return [_result(row) for row in rows]
        tokens, raw = _draw(out, processors, ids)
        waiting = [i for i, row in enumerate(rows) if row.take(tokens[i], raw[i])]
        if waiting:
            verdicts = judge.score_chunks([(i, *rows[i].current_word()) for i in waiting])
            for i, scored in zip(waiting, verdicts):
                rows[i].decide(scored, guard.threshold, guard.max_retries)
            _redraw([i for i in waiting if rows[i].resampling], rows, processors, ids)
        if all(r.done for r in rows):  # no forward for a step nobody takes
            return [_result(row) for row in rows]
        ids, mask, out = step.extend(rows, ids, mask, out)
    if all(r.done for r in rows):
        return [_result(row) for row in rows]
    raise RuntimeError("guarded generation did not finish: a bug, please report it")


def _draw(out, processors, ids: torch.Tensor) -> tuple[list[int], torch.Tensor]:
    """One token per row from the model's next-token scores; the raw scores come back too."""
    raw = out.logits[:, -1].to(copy=True, dtype=torch.float32)
    tokens = torch.multinomial(torch.softmax(processors(ids, raw), dim=-1), num_samples=1).squeeze(1)
    return tokens.tolist(), raw


def _redraw(taken_back: list[int], rows: list[Row], processors, ids: torch.Tensor) -> None:
    """A word taken back this step gets its replacement's first token at once, from the scores stored
    when the word began (no forward needs to run for it), so the row feeds it this same step instead
    of waiting a step on a masked pad."""
    if not taken_back:
        return
    raw = torch.stack([rows[i].start_logits for i in taken_back])
    for k, i in enumerate(taken_back):
        raw[k, rows[i].bans] = float("-inf")
    scores = processors(ids[taken_back], raw)
    tokens = torch.multinomial(torch.softmax(scores, dim=-1), num_samples=1).squeeze(1).tolist()
    for i, token in zip(taken_back, tokens):
        rows[i].take_replacement(token)


class _Stepper:
    """Appends each step's tokens to the batch (a masked pad for a row with none) and runs the model."""

    def __init__(self, model, pad: int, prompt_lengths: list[int], device):
        self.model, self.pad, self.lengths, self.device = model, pad, prompt_lengths, device
        self.takes_positions = "position_ids" in inspect.signature(model.forward).parameters

    def prompt_positions(self, mask: torch.Tensor) -> dict:
        """Position ids as ``generate`` makes them when the model takes them: counted from each prompt's
        first real token (``GenerationMixin._prepare_position_ids_for_generation``)."""
        if not self.takes_positions:
            return {}
        return {"position_ids": (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)}

    def extend(self, rows: list[Row], ids: torch.Tensor, mask: torch.Tensor, out):
        column = ids.shape[1]
        for i, row in enumerate(rows):
            mask[i, row.dropped] = 0  # a rejected word leaves the text, its cache columns stay as holes
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
        return ids, mask, out


def _result(row: Row) -> dict:
    return {
        "tokens": list(row.kept),
        "generation": row.text.generated(row.kept),
        "scores": row.scores,
        "interventions": row.interventions,
        "emitted_flagged": row.emitted_flagged,
    }
