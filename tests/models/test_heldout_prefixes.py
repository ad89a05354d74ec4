"""A stream benchmark's text (hades_ray/models/kit.py ``heldout_word_prefixes``): held-out demo leads only,
cut to the asked number of words, as one prefix per word, each the one before it and a word more."""

from __future__ import annotations

from hades_ray.models.kit import demo_split, heldout_word_prefixes


def test_prefixes_grow_a_word_at_a_time_over_held_out_leads():
    prefixes = heldout_word_prefixes(300)
    assert len(prefixes) == 300 and all(p.endswith(" ") for p in prefixes)
    assert [len(p.split()) for p in prefixes] == list(range(1, 301))
    assert all(b.startswith(a) for a, b in zip(prefixes, prefixes[1:]))
    first = demo_split()[1][0].split()
    assert prefixes[len(first) - 1] == " ".join(first) + " "  # the first held-out lead, whole
    train = set(demo_split()[0])
    assert not any(lead in train for lead in demo_split()[1][:5])
