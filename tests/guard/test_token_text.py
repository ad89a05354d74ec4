"""A continuation's text decoded after the prompt's last few tokens (hades_ray/guard/text.py) is the text
decoded after the whole prompt, token by token, for byte-level BPE (the offline kit's GPT-2) and
WordPiece (the micro kit's), with characters of several bytes or several tokens on both sides of the cut."""

from __future__ import annotations

import random

import pytest

from hades_ray.guard.text import TokenText

PIECES = ["The", " city", " of", " café", " naïve", " 東京", "🙂", " don't", " U.S.", ",", ".", " (", ")", " 3.5"]
PIECES += [" ∑x", "ж"]


class WholePrompt(TokenText):
    """Every continuation decoded after the whole prompt, as before the short context."""

    CONTEXT = 10**9


def _tokenizer(kind: str):
    if kind == "byte-level BPE":
        from hades_ray.models.train_gpt2 import train_bpe_tokenizer

        rng = random.Random(1)
        return train_bpe_tokenizer(["".join(rng.choices(PIECES, k=30)) for _ in range(200)], vocab_size=300)
    from hades_ray.models.registry import load_tokenizer

    return load_tokenizer("local:mlm")


@pytest.mark.parametrize("kind", ["byte-level BPE", "WordPiece"])
def test_the_prompts_last_tokens_give_the_whole_prompts_continuation(micro_home, kind):
    tokenizer = _tokenizer(kind)
    rng = random.Random(0)
    shortened = 0
    for _ in range(40):
        prompt = tokenizer("".join(rng.choices(PIECES, k=rng.randrange(1, 40))), add_special_tokens=False)
        continuation = tokenizer("".join(rng.choices(PIECES, k=12)), add_special_tokens=False)["input_ids"]
        continuation += [rng.randrange(len(tokenizer)) for _ in range(4)]  # any token a sampler may draw
        short, whole = TokenText(tokenizer, prompt["input_ids"]), WholePrompt(tokenizer, prompt["input_ids"])
        shortened += short.context_ids is not short.prompt_ids
        for end in range(len(continuation) + 1):
            kept = continuation[:end]
            assert short.generated(kept) == whole.generated(kept), (prompt["input_ids"], kept)
            if end < len(continuation):
                assert short.piece(kept, continuation[end]) == whole.piece(kept, continuation[end])
    assert shortened > 25  # most prompts are longer than the context: the short path is the one tested
