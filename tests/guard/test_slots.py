"""Continuous batching in the guard (``guard.slots``, hades_ray/guard/loop.py): a slot whose row is done
takes the next prompt, its keys and values placed at the batch's right edge. Greedy decoding makes each
prompt's text independent of its neighbours, so any column out of place shows as a changed token; with
sampling, prompts that all finish together continue ``model.generate``'s random stream batch after batch."""

from __future__ import annotations

import hashlib

import torch

from hades_ray.guard.loop import GuardSettings, guarded_generate
from hades_ray.guard.sampling import Sampling
from tests.guard.test_guard import _strip

PROMPTS = [
    "the city of",
    "in 1990 the band released their first album",
    "he was born in",
    "x",
    "the river flows north past three old mills and",
]


class HashJudge:
    """Flags a word by a hash of the text up to it: the same text gets the same verdict in any slot, and
    rows reject different numbers of words, so they finish at different steps."""

    threshold = 0.5

    def begin(self, rows: int) -> None:
        pass

    def score_chunks(self, requests):
        out = []
        for _, prefix, chunk in requests:
            flagged = hashlib.sha256((prefix + chunk).encode()).digest()[0] % 3 == 0
            out.append(
                [{"start": 0, "end": len(chunk), "word": chunk.strip(), "p": float(flagged)}] if chunk.strip() else []
            )
        return out


def test_slots_that_take_the_next_prompt_give_each_prompt_the_text_it_gets_in_one_batch(generator):
    tokenizer, model = generator
    sampling = Sampling(max_new_tokens=14, top_k=1)
    together = guarded_generate(model, tokenizer, PROMPTS, sampling, HashJudge(), GuardSettings(0.5, 2), 0)
    assert len({sum(len(i["interventions"]) for i in [g]) for g in together}) > 1  # rows finish apart
    for slots in (1, 2, 3):
        refilled = guarded_generate(model, tokenizer, PROMPTS, sampling, HashJudge(), GuardSettings(0.5, 2, slots), 0)
        assert [g["tokens"] for g in refilled] == [g["tokens"] for g in together], slots
        assert [g["interventions"] for g in refilled] == [g["interventions"] for g in together], slots


def test_rows_that_finish_together_hand_their_slots_on_as_generate_runs_batch_after_batch(generator):
    tokenizer, model = generator
    prompts = PROMPTS[:4]
    sampling = Sampling(max_new_tokens=10, top_k=20, no_end=True)
    never = HashJudge()
    never.threshold = 2.0  # p(H) is at most 1
    got = guarded_generate(model, tokenizer, prompts, sampling, never, GuardSettings(2.0, 3, 2), 5)
    end = model.generation_config.eos_token_id
    torch.manual_seed(5)  # one stream for both batches, as the loop draws them
    expected = []
    for batch in (prompts[:2], prompts[2:]):
        enc = tokenizer(batch, return_tensors="pt", padding=True)
        out = model.generate(
            input_ids=enc["input_ids"],
            attention_mask=enc["attention_mask"],
            do_sample=True,
            top_k=20,
            max_new_tokens=10,
            suppress_tokens=[end],
        )
        expected += out[:, enc["input_ids"].shape[1] :].tolist()
    assert [g["tokens"] for g in got] == [_strip(e, end) for e in expected]
