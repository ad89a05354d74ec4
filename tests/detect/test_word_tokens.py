"""The causal judge's token-to-word map of a growing text (hades_ray/detect/word_tokens.py): tokenizing only
the words a row's text did not have before gives, after any mix of growth, rollback and replacement, the
map ``token_words_of`` gives the whole text, on a byte-level BPE built as the offline kit's GPT-2 one is."""

from __future__ import annotations

import random

import numpy as np

from hades_ray.detect.spans import token_words_of
from hades_ray.detect.word_tokens import TextTokens

RARE = ["∑", "€5", "ж", "🙂"]  # not in the tokenizer's training text: a lone space token comes before them
WORDS = "the city of 1990 band released , . ; don't it's \"quoted\" café naïve 東京 — ( ) 3.5 100,000 U.S. 's x".split()


def test_growing_texts_map_tokens_to_words_as_the_whole_text_does():
    from hades_ray.models.train_gpt2 import train_bpe_tokenizer

    rng = random.Random(0)
    tokenizer = train_bpe_tokenizer([" ".join(rng.choices(WORDS, k=30)) for _ in range(200)], vocab_size=400)
    tokens = TextTokens(tokenizer)
    assert tokens.incremental  # GPT-2's byte-level BPE: the fast path is the one under test
    texts, checked = {row: [] for row in range(3)}, 0
    for _ in range(600):
        row = rng.randrange(3)
        words, move = texts[row], rng.random()
        if move < 0.7:
            words = words + [rng.choice(WORDS + RARE)]  # the generator wrote a word
        elif move < 0.85 and words:
            words = words[: rng.randrange(len(words))]  # a rollback, or a slot's new prompt
        elif words:
            words = words[:-1] + [rng.choice(WORDS + RARE)]  # a word drawn again
        texts[row] = words
        if words:
            got = tokens.of([row], [words])[0]
            assert np.array_equal(got, token_words_of(tokenizer, [words])[0]), words
            checked += 1
    assert checked > 400


def test_windows_cut_from_the_text_are_the_windows_score_encodes():
    from hades_ray.models.train_gpt2 import train_bpe_tokenizer
    from hades_ray.detect.causal import encode_windows

    rng = random.Random(1)
    tokenizer = train_bpe_tokenizer([" ".join(rng.choices(WORDS, k=30)) for _ in range(200)], vocab_size=400)
    tokens = TextTokens(tokenizer)
    assert tokens.plain_windows
    words, checked = [], 0
    for _ in range(300):
        words = (
            words[: rng.randrange(len(words))] if words and rng.random() < 0.2 else words + [rng.choice(WORDS + RARE)]
        )
        if not words:
            continue
        tokens.of([0], [words])
        lo = rng.randrange(len(words))
        window = (words, lo, rng.randrange(lo + 1, len(words) + 1))
        (got_ids, got_owner), (ids, owner) = tokens.windows([0], [window])[0], encode_windows(tokenizer, [window])[0]
        assert got_ids == ids and np.array_equal(got_owner, owner), window
        checked += 1
    assert checked > 200


def test_a_backend_left_truncating_goes_through_the_tokenizers_call():
    """New words are tokenized by the backend directly only while it neither truncates nor pads: a backend
    left truncating by an earlier call goes through the tokenizer's call, which turns that off."""
    from hades_ray.models.train_gpt2 import train_bpe_tokenizer

    rng = random.Random(2)
    tokenizer = train_bpe_tokenizer([" ".join(rng.choices(WORDS, k=30)) for _ in range(200)], vocab_size=400)
    words = rng.choices(WORDS, k=40)
    tokenizer.backend_tokenizer.enable_truncation(max_length=5)
    got = TextTokens(tokenizer).of([0], [words])[0]
    assert len(got) > 5 and np.array_equal(got, token_words_of(tokenizer, [words])[0])
