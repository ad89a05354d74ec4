"""``Detector.stream`` and ``Detector.stopping_criteria``: words as the text grows, the union of all
calls one ``score`` of the final text, ``/score/next``'s answers, and ``model.generate`` stopped at a
flagged word."""

from __future__ import annotations

import threading

import pytest
import torch

from hades_ray import Detector

TEXT = "Marie Curie was born in Warsaw in 1867, and she won the Nobel Prize twice. Short one here."


@pytest.mark.parametrize("which", ["causal_online", "encoder_online"])
@pytest.mark.parametrize("step", [1, 7])
def test_all_calls_together_are_one_score_of_the_final_text(which, step, request):
    det = Detector.open(request.getfixturevalue(which))
    stream, got = det.stream(words="all"), []
    cuts = [*range(step, len(TEXT), step), len(TEXT)]
    for cut in cuts:
        fresh = stream.feed(TEXT[:cut], final=cut == len(TEXT))
        assert all(w["end"] < cut or cut == len(TEXT) for w in fresh)  # a word is out once complete
        got += fresh
    whole = det.score(TEXT, words="all")["words"]
    if which == "encoder_online":  # each word's own view: the very forward score runs, the same bits
        assert got == whole
    else:  # one forward per window: the text so far is a shorter forward than the whole text's, rounded apart
        assert [(w["word"], w["start"], w["end"]) for w in got] == [(w["word"], w["start"], w["end"]) for w in whole]
        assert [w["p"] for w in got] == pytest.approx([w["p"] for w in whole], abs=1e-6)


def test_each_answer_is_the_complete_words_of_a_score_of_the_text_so_far(encoder_online):
    det = Detector.open(encoder_online)
    stream, since = det.stream(words="all"), 0
    for cut in (12, 30, 31, 60, len(TEXT)):
        final = cut == len(TEXT)
        words = [w for w in det.score(TEXT[:cut], words="all")["words"] if w["start"] >= since]
        complete = [w for w in words if final or w["end"] < cut]
        assert stream.feed(TEXT[:cut], final=final) == complete
        since = complete[-1]["end"] if complete else since


def test_content_words_wait_for_two_more_words(encoder_online):
    stream = Detector.open(encoder_online).stream()  # words="content": a name may still grow
    assert stream.feed("Marie Curie was") == []
    assert [w["word"] for w in stream.feed("Marie Curie was born ")] == ["Marie Curie"]
    assert [w["word"] for w in stream.feed("Marie Curie was born in Warsaw", final=True)] == ["born", "Warsaw"]


def test_feeding_a_text_that_changed_or_a_finished_stream_is_refused(encoder_online):
    stream = Detector.open(encoder_online).stream()
    stream.feed("Marie Curie was born in Warsaw")
    with pytest.raises(ValueError, match="first 11 characters changed"):
        stream.feed("Pierre Curie was born in Warsaw and Paris")
    stream.feed("Marie Curie was born in Warsaw.", final=True)
    with pytest.raises(ValueError, match="final=True already"):
        stream.feed("Marie Curie was born in Warsaw. More")
    with pytest.raises(ValueError, match="must be a string"):
        Detector.open(encoder_online).stream().feed(b"bytes")


def test_text_iterator_streamer_loop(encoder_online, generator):
    from transformers import TextIteratorStreamer

    tokenizer, model = generator
    det = Detector.open(encoder_online)
    stream = det.stream(words="all")
    streamer = TextIteratorStreamer(tokenizer, skip_prompt=True, skip_special_tokens=True)
    inputs = tokenizer("The city of", return_tensors="pt", return_token_type_ids=False)
    torch.manual_seed(0)
    kwargs = dict(**inputs, streamer=streamer, max_new_tokens=25, do_sample=True, pad_token_id=tokenizer.pad_token_id)
    thread = threading.Thread(target=model.generate, kwargs=kwargs)
    thread.start()
    text, words = "", []
    for chunk in streamer:
        text += chunk
        words += stream.feed(text)
    thread.join()
    words += stream.feed(text, final=True)
    assert text.strip() and words == det.score(text, words="all")["words"]


def test_stopping_criteria_stop_each_row_at_its_first_flagged_word(encoder_online, generator):
    tokenizer, model = generator
    tokenizer.padding_side = "left"
    det = Detector.open(encoder_online)
    prompts = ["the city of", "in 1990 the band released their first album"]
    inputs = tokenizer(prompts, return_tensors="pt", padding=True, return_token_type_ids=False)

    def run(threshold):
        stop = det.stopping_criteria(tokenizer, threshold=threshold, words="all")
        torch.manual_seed(1)
        out = model.generate(**inputs, stopping_criteria=[stop], max_new_tokens=30, do_sample=True)
        return stop, out[:, inputs["input_ids"].shape[1] :]

    never, free = run(1.0)
    assert never.stopped == [None, None] and all(len(w) > 0 for w in never.words)
    median = sorted(w["p"] for row in never.words for w in row)[len(never.words[0]) // 2]
    stop, cut = run(median)
    assert any(s is not None for s in stop.stopped)
    for i, stopped in enumerate(stop.stopped):
        judged = never.words[i]  # the same draws up to the stop: the same words, the same p(H)
        first = next((w for w in judged if w["p"] >= median), None)
        if stopped is None:
            assert first is None
            continue
        assert {k: v for k, v in stopped.items() if k != "new_tokens"} == first | {"flag": True}
        assert stop.words[i][-1]["start"] == stopped["start"]  # judging ended at the stop
        assert torch.equal(cut[i, : stopped["new_tokens"]], free[i, : stopped["new_tokens"]])


def test_stopping_criteria_refuse_an_offline_detector(encoder_offline, generator):
    with pytest.raises(ValueError, match="needs an online span classifier"):
        Detector.open(encoder_offline).stopping_criteria(generator[0])
