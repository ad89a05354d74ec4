"""A probe on ``model.generate``: each generated word's p(H) from the hidden states the generator computes
anyway, with no second forward (``Detector.probe``; the probe itself: ``hades_ray/detect/probe.py``).

Hooks on the generator's base model keep every token's state at the probe's layer (``detect.layer``) as
``generate`` runs its forwards. After each new token the ``StoppingCriteria`` decodes each row's text as
the stopping criterion does (``api/stopping.py``), cuts its words and targets with the stream's own
``TextStream``, and scores the completed targets with ``ProbeJudge``: a target's tokens (each token
belongs to the word its last character falls in, as ``score`` assigns them) pooled and put through the
probe's head. Where the text re-tokenizes into the generated tokens (words joined by single spaces), the
states are those ``score``'s one forward over the text computes, rounded apart by the cached forwards
(tests/api/test_probe.py states the tolerance). The state of the newest token is computed by the next
forward, so a word is judged once a token after it has been run; the word still being written when
``generate`` stops is never judged (a last forward would be a second one).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from transformers import StoppingCriteria

from hades_ray.detect.judged_words import word_start
from hades_ray.guard.text import TokenText

# Config fields that do not change what a model computes (its name, its save's version, its dtype).
_NAMING = {"_name_or_path", "architectures", "transformers_version", "torch_dtype", "dtype", "_commit_hash"}


def check_generator(model, settings: dict) -> None:
    """Refuse (one ``ValueError`` line) a generator that is not the probe's backbone: its config must be
    the backbone's, and so must its input embeddings (read from the backbone's local checkpoint; a hub
    model's must bear its name), since a model made from the same config with other weights is another."""
    from hades_ray.detect.probe import generator_config
    from hades_ray.models.registry import resolve_model

    source = resolve_model(settings["backbone"])
    named = getattr(model.config, "_name_or_path", "") or type(model).__name__
    theirs = generator_config(settings["backbone"], settings.get("revision")).to_dict()
    same = _plain(model.config.to_dict()) == _plain(theirs)
    if same:
        same = _same_embeddings(model, source) if Path(source).is_dir() else named == source
    if not same:
        raise ValueError(
            f"the probe reads the states of {settings['backbone']} ({source}); this generator ({named}) is "
            "another model: generate with the probe's own backbone"
        )


def _plain(config: dict) -> dict:
    return {k: v for k, v in config.items() if k not in _NAMING}


def _same_embeddings(model, source: str) -> bool:
    """Whether the generator's input embeddings are those of the checkpoint in folder ``source``."""
    from safetensors import safe_open

    weight = model.get_input_embeddings().weight
    name = next(n for n, p in model.named_parameters() if p is weight)
    for file in sorted(Path(source).glob("*.safetensors")):
        with safe_open(str(file), "pt") as handle:
            for key in handle.keys():
                if name.endswith(key) or key.endswith(name.split(".", 1)[-1]):
                    return torch.equal(handle.get_tensor(key).to(weight.dtype), weight.detach().cpu())
    return False


class LayerTap:
    """Hooks on a generator's base model handing each forward's states at ``layer`` (-1: the last hidden
    state) to ``keep(states, prefill)``; every layer's states are asked for only where ``layer`` needs them.
    A prefill is a forward with no cache, or an empty one. ``close()`` removes the hooks."""

    def __init__(self, model, layer: int, keep):
        self.layer, self.keep = layer, keep
        base = model.base_model
        self._hooks = [base.register_forward_pre_hook(self._ask, with_kwargs=True),
                       base.register_forward_hook(self._kept, with_kwargs=True)]  # fmt: skip

    def _ask(self, module, args, kwargs):
        cache = kwargs.get("cache", kwargs.get("past_key_values"))
        self._prefill = cache is None or cache.get_seq_length() == 0
        return args, ({**kwargs, "output_hidden_states": True} if self.layer != -1 else kwargs)

    def _kept(self, module, args, kwargs, out):
        states = out.last_hidden_state if self.layer == -1 else out.hidden_states[self.layer]
        self.keep(states.detach(), self._prefill)

    def close(self) -> None:
        for hook in self._hooks:
            hook.remove()
        self._hooks = []


class ProbeJudge:
    """A judge whose p(H) comes from the kept generator states of each row's text (``current[row]``: the
    text, each token's end in it, whether it is real, and the states run so far)."""

    def __init__(self, head, pooling: str):
        self.head, self.pooling = head, pooling
        # row -> (text, each token's end in it, whether it is real, its states: a tensor or a list of them)
        self.current: dict[int, tuple[str, np.ndarray, np.ndarray, torch.Tensor | list]] = {}

    def begin(self, rows: int) -> None:
        """Nothing to reset: ``GenerationProbe`` sets ``current`` before each feed."""

    def score_targets(self, requests: list[tuple[int, list[str], list[int], list[int]]]) -> list[np.ndarray]:
        """For each ``(row, words, first, last)``: p(H) of the targets ``first[j]..last[j]`` (unit indices
        of the current text), their tokens' kept states pooled; ``_NotYet`` where a target reaches the
        newest token, whose state the next forward computes."""
        from hades_ray.detect.stable import head_probabilities, pool_span

        pooled, sizes = [], []
        for row, words, first, last in requests:
            text, ends, real, states = self.current[row]
            starts, at = [], 0
            for word in words:  # a text's units are its substrings, in order
                at = text.index(word, at)
                starts.append(at)
                at += len(word)
            owner = np.searchsorted(np.array(starts), ends - 1, side="right") - 1
            # a token belongs to the word its last character falls in; those after the last word, to none
            owner = np.where(real & (ends <= at), owner, -1)
            for f, la in zip(first, last):
                own = np.flatnonzero((owner >= f) & (owner <= la))
                if not len(own):  # no token of its own: the last token ending in it, as score's last token
                    own = np.flatnonzero(ends <= starts[la] + len(words[la]))[-1:]
                if own[-1] >= len(states):
                    raise _NotYet
                span = torch.stack([states[k] for k in own.tolist()])
                mask = torch.ones((1, len(own)), dtype=torch.bool, device=span.device)
                pooled.append(pool_span(span[None], mask, self.pooling))
            sizes.append(len(first))
        p = np.zeros(0)
        if pooled:
            with torch.no_grad():
                p = head_probabilities(self.head, torch.cat(pooled)).cpu().numpy().astype(np.float64)
        return list(np.split(p, np.cumsum(sizes)[:-1]))


class _NotYet(Exception):
    """A target's last token is the newest one: its state comes with the next forward."""


class GenerationProbe(StoppingCriteria):
    """Judges each row's generated words from the generator's own states; with ``stop``, a row stops at its
    first flagged word. ``words[i]``: row ``i``'s judged words, each ``{"word", "start", "end", "p",
    "flag"}`` (``Detector.score``'s word record, offsets in the row's prompt + continuation text);
    ``stopped[i]``: the word row ``i`` stopped at (with ``new_tokens``), or None. ``stream_of``: a new
    ``TextStream`` over a judge (the detector's words, language and threshold); ``threads``: the intra-op
    threads its small pooling and head calls run with (``detect.torch_threads``; 0: as they are: on a
    busy CPU, several threads' start-up costs those calls far more than their work). Use as a context
    manager, or ``close()`` to remove the hooks."""

    def __init__(self, model, tokenizer, head, settings: dict, stream_of, stop: bool = True, threads: int = 0):
        check_generator(model, settings)
        self.tokenizer, self.stop, self.stream_of, self.threads = tokenizer, stop, stream_of, threads
        self.judge = ProbeJudge(head.to(model.device), settings["pooling"])
        self.chunks: list[torch.Tensor] = []  # each forward's states, [rows, new tokens, hidden]
        self.words: list[list[dict]] = []
        self.stopped: list[dict | None] = []
        self._rows: list[dict] | None = None
        self._tap = LayerTap(model, int(settings.get("layer", -1)), self._keep)

    def _keep(self, states: torch.Tensor, prefill: bool) -> None:
        if prefill:  # a new generation
            self.chunks, self._rows = [], None
        self.chunks.append(states)

    def close(self) -> None:
        """Remove the hooks: the generator runs as it did before."""
        self._tap.close()

    def __enter__(self) -> GenerationProbe:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __call__(self, input_ids: torch.LongTensor, scores=None, **kwargs) -> torch.BoolTensor:
        from hades_ray.detect.stable import torch_threads

        with torch_threads(self.threads):
            return self._judge(input_ids)

    def _judge(self, input_ids: torch.LongTensor) -> torch.BoolTensor:
        if self._rows is None:
            self._begin(input_ids)
        self.chunks = [torch.cat(self.chunks, dim=1)] if len(self.chunks) > 1 else self.chunks
        for i, row in enumerate(self._rows):
            if self.stopped[i] is None:
                self._step(i, row, input_ids[i, self._width :].tolist(), self.chunks[0][i, row["lead"] :])
        return torch.tensor([s is not None for s in self.stopped], dtype=torch.bool, device=input_ids.device)

    def _begin(self, input_ids: torch.LongTensor) -> None:
        pad, self._width = self.tokenizer.pad_token_id, input_ids.shape[1] - 1
        self._rows, self.words, self.stopped = [], [[] for _ in input_ids], [None] * input_ids.shape[0]
        for ids in input_ids[:, :-1].tolist():
            lead = next((k for k, t in enumerate(ids) if t != pad), len(ids))  # left padding: no part of it
            text = TokenText(self.tokenizer, ids[lead:])
            ends = text.prompt_ends()
            self._rows.append({"lead": lead, "text": text, "stream": None, "ends": ends, "prompt": len(ends)})

    def _step(self, i: int, row: dict, new: list[int], states: torch.Tensor) -> None:
        text = row["text"]
        while len(row["ends"]) < row["prompt"] + len(new):  # each new token's end in the text, decoded once
            row["ends"].append(text.end(new[: len(row["ends"]) - row["prompt"] + 1]))
        full = text.prompt + text.generated(new)
        if row["stream"] is None:  # the first judged word is the one the prompt ends in, if any
            row["stream"] = self.stream_of(self.judge)
            row["stream"].since = word_start(full, len(text.prompt), row["stream"].lang)
        added = full[row["fed"] :] if row.get("fed") is not None and row["stream"].lang.spaced else ""
        if added.isalnum():  # letters that extend the last word complete no word: the stream would cut,
            return  # tag and find nothing (its words do not depend on how the text was chunked)
        self.judge.current = {row["stream"].row: (full, np.array(row["ends"]), _real(full, row["ends"]), states)}
        try:
            found = row["stream"].feed(full)
        except _NotYet:  # the newest token finished a target: it is judged after the next forward
            row["fed"] = None  # (fed then whatever that token adds)
            return
        row["fed"] = len(full)
        for word in found:
            self.words[i].append(word)
            if word["flag"] and self.stop:
                self.stopped[i] = word | {"new_tokens": len(new)}
                return


def _real(text: str, ends: list[int]) -> np.ndarray:
    """Whether each token adds more than spaces to ``text`` (a token of spaces, or a special decoded to
    nothing, belongs to no word, as in ``score``'s windows)."""
    starts = [0, *ends[:-1]]
    return np.array([b > a and not text[a:b].isspace() for a, b in zip(starts, ends)], dtype=bool)


def stream_maker(detector, config, threshold: float | None, language: str | None, words: str | None):
    """A function of a judge giving a new ``TextStream`` that cuts words as ``Detector.stream`` does: the
    texts' ``language`` (None: the detector's), ``words`` (None: ``score.words``), flagged at ``threshold``
    (None: ``score.threshold``, else the detector's own). The language's pipeline loads at the first call,
    so a refused generator costs no spaCy load (loaded once per process)."""
    import functools

    from hades_ray.score.runner import language_config

    resolved = language_config(config, detector, given=language)
    words = words or resolved.score.words
    given = resolved.score.threshold if threshold is None else threshold
    cut = detector.threshold if given is None else float(given)
    return functools.partial(_stream, resolved, words, cut)


def _stream(resolved, words: str, threshold: float, judge):
    from hades_ray.score.stages import text_pipeline  # loaded once per process
    from hades_ray.score.stream import TextStream

    nlp = text_pipeline(resolved.lang, words, resolved.spacy_model)
    return TextStream(judge, words, nlp, resolved.lang, threshold)
