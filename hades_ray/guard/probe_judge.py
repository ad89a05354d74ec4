"""The guard's judge for a probe on its own generator: each word's p(H) from the states the guarded loop's
forwards compute anyway, so guarding adds no forward (the watcher on ``model.generate``: ``guard/probe.py``).

``GeneratorStates`` keeps each slot's token states at the probe's layer beside the loop's key/value cache:
a prompt's from the forward that runs it (``prompts``; a refilled slot's from the waiting prompts' forward,
``placed``), then the state of each token a row feeds (``fed``). A word taken back leaves with its states,
as its columns leave the attention mask: ``fed`` is told the row's token count, so the states of the tokens
it replaced are cut first. When a word ends, all its tokens have been fed (the token that ended it has
not), so every state the probe pools is there. The words and their p(H) are ``ProbeJudge``'s, the text
being the row's prompt and kept tokens as decoded (``TokenText``), each token belonging to the word its
last character falls in, as ``Detector.probe`` and ``score`` assign them.
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch

from hades_ray.guard.probe import LayerTap, ProbeJudge, _real, check_generator
from hades_ray.text.languages import Language


class GeneratorStates:
    """Each slot's token states (prompt tokens, then kept generated tokens), as the loop runs the generator."""

    def __init__(self, model, layer: int, rows: list):
        self.rows = rows  # the loop's ``Row`` per slot (a refilled slot gets a new one in place)
        self.last: torch.Tensor | None = None  # the latest forward's states, [rows, tokens, hidden]
        self.states: dict[int, list[torch.Tensor]] = {}
        self._ends: dict[int, tuple] = {}  # slot -> (its Row, the kept tokens measured, each token's end)
        self._tap = LayerTap(model, layer, self._keep)

    def _keep(self, states: torch.Tensor, prefill: bool) -> None:
        self.last = states

    def prompts(self, slots: list[int], mask: torch.Tensor) -> None:
        """The forward just run was these slots' prompts (``mask``: their real tokens)."""
        for k, i in enumerate(slots):
            self.states[i] = list(self.last[k][mask[k].bool()])

    def waiting(self, k: int, pad: int) -> torch.Tensor:
        """The states of prompt ``k`` of the forward just run over waiting prompts, its ``pad`` left off."""
        return self.last[k, pad:]

    def placed(self, slot: int, states: torch.Tensor) -> None:
        """A waiting prompt (``waiting``'s states) takes ``slot``."""
        self.states[slot] = list(states)

    def fed(self, tokens: dict[int, int]) -> None:
        """The forward just run fed each of these slots one token; ``tokens[i]``: the slot's text tokens
        with it (fewer than before where a word was taken back: the states of the tokens it had go)."""
        for i, n in tokens.items():
            del self.states[i][n - 1 :]
            self.states[i].append(self.last[i, -1])

    def current(self, slot: int) -> tuple[str, np.ndarray, np.ndarray, list[torch.Tensor]]:
        """(the slot's text, each token's end in it, whether it is real, its states) for ``ProbeJudge``."""
        row = self.rows[slot]
        text = row.text
        known = self._ends.get(slot)
        if known is None or known[0] is not row:  # a new prompt in the slot: its tokens' ends, decoded once
            known = (row, [], text.prompt_ends())
        _, measured, ends = known
        common = min(len(measured), len(row.kept))
        same = next((k for k, (a, b) in enumerate(zip(measured, row.kept)) if a != b), common)
        del ends[len(text.prompt_ids) + same :]
        for k in range(same, len(row.kept)):
            ends.append(text.end(row.kept[: k + 1]))
        self._ends[slot] = (row, list(row.kept), ends)
        full = text.prompt + text.generated(row.kept)
        return full, np.array(ends), _real(full, ends), self.states[slot]

    def close(self) -> None:
        self._tap.close()


class ProbeGuardJudge:
    """The guard's judge (``begin``, ``score_chunks``, ``threshold``) for a probe whose backbone is the
    generator; ``reading(model, rows)`` keeps the states for one ``guarded_generate`` call."""

    def __init__(self, model, head, settings: dict, threshold: float, words: str, *, lang: Language, threads: int = 0):
        check_generator(model, settings)
        self.layer = int(settings.get("layer", -1))
        self.probe = ProbeJudge(head.to(model.device), settings["pooling"])
        self.threshold, self.words, self.lang, self.threads = float(threshold), words, lang, threads
        self.states: GeneratorStates | None = None

    @contextlib.contextmanager
    def reading(self, model, rows: list):
        """Keep the slots' states while the loop runs (the hooks go when it returns or fails)."""
        self.states = GeneratorStates(model, self.layer, rows)
        try:
            yield self.states
        finally:
            self.states.close()
            self.states = None

    def begin(self, rows: int) -> None:
        """Nothing to reset: ``reading`` starts each call's states afresh."""

    def score_chunks(self, requests: list[tuple[int, str, str]]) -> list[list[dict]]:
        """For each ``(slot, prefix, chunk)``: the chunk's judged words and their p(H), as every judge answers."""
        from hades_ray.detect.incremental import chunk_records
        from hades_ray.detect.stable import torch_threads

        self.probe.current = {i: self.states.current(i) for i in {i for i, _, _ in requests}}
        with torch_threads(self.threads):
            return chunk_records(self.probe, requests, self.words, self.lang)


def probe_guard_judge(detector, model, threshold: float | None, words: str, *, lang: Language, threads: int = 0):
    """The probe's judge on ``model``'s own states, or None where ``detector`` is no probe or ``model`` is not
    its backbone (the guard then judges with the probe's own backbone: a second forward per token)."""
    from hades_ray.detect.probe import is_probe

    if not is_probe(detector.meta):
        return None
    cut = detector.threshold if threshold is None else float(threshold)
    try:
        return ProbeGuardJudge(model, detector.load_head(), detector.meta, cut, words, lang=lang, threads=threads)
    except ValueError:  # another generator (check_generator)
        return None
