"""The guard's words in other languages: a chunk's judged words are the detector's words of the text
(``text.words``: Devanagari vowel signs inside their word, the language's stop words skipped), and on
English text they are what the old ``\\w+|[^\\w\\s]`` cut gave."""

from __future__ import annotations

import re

import pytest

from hades_ray.detect.judged_words import chunk_items, word_start
from hades_ray.text.languages import language
from hades_ray.text.stopwords import english_stop_words

OLD_WORDS, OLD_CHAR = re.compile(r"\w+|[^\w\s]"), re.compile(r"\w")


def _old_chunk_items(prefix: str, chunk: str, words: str) -> list[dict]:
    """The guard's English chunk items before languages came (kept here as the reference)."""
    before, found = OLD_WORDS.findall(prefix), list(OLD_WORDS.finditer(chunk))
    inside = [m.group() for m in found]
    if before and inside and OLD_CHAR.match(prefix[-1]) and OLD_CHAR.match(chunk[0]):
        inside[0] = before.pop() + inside[0]
    judged = [
        any(ch.isalnum() for ch in w) and (words == "all" or w.lower() not in english_stop_words("nltk"))
        for w in inside
    ]
    return [
        {"words": before + inside, "start": len(before) + k, "end": len(before) + k, "span": (m.start(), m.end())}
        for k, m in enumerate(found)
        if judged[k]
    ]


@pytest.mark.parametrize("words", ["content", "all"])
@pytest.mark.parametrize(
    ("prefix", "chunk"),
    [
        ("The river flows", " north,"),
        ("Marie Cur", "ie was"),  # the chunk continues the prompt's last word
        ("He won in 19", "98."),
        ("Short one here.", " It's"),
        ("", "Paris"),
        ("a (b)", " — the"),
    ],
)
def test_english_chunk_items_are_the_old_ones(prefix, chunk, words):
    assert chunk_items(prefix, chunk, words, lang=language("en")) == _old_chunk_items(prefix, chunk, words)


def test_a_hindi_vowel_sign_continues_its_word_and_stop_words_are_hindi():
    prefix, chunk = "भारत की राजधान", "ी नई"
    items = chunk_items(prefix, chunk, "content", lang=language("hi"))
    text = prefix + chunk
    judged = [items[0]["words"][i["start"]] for i in items]
    assert judged == ["राजधानी", "नई"] and items[0]["span"] == (0, 1)
    assert all(text[len(prefix) + i["span"][0] : len(prefix) + i["span"][1]] in w for i, w in zip(items, judged))
    assert not chunk_items("भारत", " की", "content", lang=language("hi"))  # की: a Hindi stop word
    assert word_start(text, len(prefix), language("hi")) == prefix.index("राजधान")


def test_german_content_words_skip_german_stop_words():
    items = chunk_items("Sie wohnt in", " der Stadt", "content", lang=language("de"))
    assert [i["words"][i["start"]] for i in items] == ["Stadt"]
