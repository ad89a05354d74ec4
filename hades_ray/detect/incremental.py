"""A causal online judge that scores as the text grows: each row keeps the key/value cache of the window
it is being scored in, so judging costs about one backbone forward per new judge token, not one per word.

It follows ``hades-ray score``'s windows exactly (``hades_ray/detect/causal.py``): a text longer than
the detector's window is cut into windows of ``window`` tokens starting every ``stride`` tokens, and a
word is scored in the first window that holds it whole. A window's tokens are its own encoding (its
words joined by single spaces, with the tokenizer's specials), so a row's cache belongs to one window:
while words land in the same window the new tokens extend the cache; a word owned by a later window
re-encodes that window from its start (one prefill forward), and the cache then grows from there.

Rollback needs no call: each request names its row, and the row's cache keeps only the longest prefix
its cached token ids share with the window's encoding now, never reaching into the words being judged.
A resampled word therefore finds the cache cut back to the word's start; a window taken by a rejected
word is re-encoded. The hidden states are those of a forward over the whole window, as ``score`` runs it;
the forwards differ in shape only (``hades_ray/detect/row_caches.py``), so p(H) agrees to float rounding.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from hades_ray.detect.row_caches import RowCaches
from hades_ray.detect.word_tokens import TextTokens
from hades_ray.detect.judged_words import chunk_items
from hades_ray.text.languages import Language


@dataclass
class _Job:
    """One row's forward in one window: the window's token ids, each token's word, the targets' words."""

    row: int
    lo: int
    ids: list[int]
    owner: np.ndarray
    targets: list[tuple[int, int, int, int]] = field(default_factory=list)  # (request, target in it, first, last word)


class CausalJudge:
    """p(H) of each chunk's judged words from a span classifier with a causal backbone, cached per row."""

    def __init__(self, scorer, threshold: float | None, words: str = "content", *, lang: Language):
        scorer.detector.require_online()
        self.scorer, self.tokenizer, self.model = scorer, scorer.tokenizer, scorer.model
        self.window, self.stride = scorer.window, scorer.stride
        self.threshold = scorer.detector.threshold if threshold is None else float(threshold)
        self.words, self.lang = words, lang
        self.caches = RowCaches(0, self.window)
        self.text_tokens = TextTokens(self.tokenizer)  # each row's text's tokens, tokenized as it grows

    def begin(self, rows: int) -> None:
        """A new batch of ``rows`` texts: every cache starts empty."""
        self.caches = RowCaches(rows, self.window)
        self.text_tokens.begin()

    def score_chunks(self, requests: list[tuple[int, str, str]]) -> list[list[dict]]:
        """For each ``(row, prefix, chunk)``: the chunk's judged words ``{"start", "end", "word", "p"}``
        (characters in the chunk), every row's new tokens run together."""
        return chunk_records(self, requests, self.words, self.lang)

    @torch.inference_mode()
    def score_targets(self, requests: list[tuple[int, list[str], list[int], list[int]]]) -> list[np.ndarray]:
        """For each ``(row, words, first, last)``: p(H) of the targets ``first[j]..last[j]`` (word indices)
        of row's text ``words`` (its words so far), every row's new tokens run together."""
        from hades_ray.detect.stable import head_probabilities

        jobs, leftovers = self._plan(requests)
        pooled: dict[tuple[int, int], torch.Tensor] = {}
        while jobs:  # a row whose targets span two windows has a second job: run after its first
            now = {}
            for job in jobs:
                now.setdefault(job.row, job)
            pooled |= self._run(list(now.values()))
            jobs = [j for j in jobs if now[j.row] is not j]
        p = np.zeros(0)
        keys = sorted(pooled)
        if keys:
            p = head_probabilities(self.model.head, torch.stack([pooled[k] for k in keys])).cpu().numpy()
        values = {k: float(v) for k, v in zip(keys, p.astype(np.float64))}
        values |= self._leftovers(requests, leftovers)
        return [np.array([values[(k, j)] for j in range(len(first))]) for k, (_, _, first, _) in enumerate(requests)]

    def _plan(self, requests) -> tuple[list[_Job], list[tuple[int, int]]]:
        """Each request's window jobs (in window order), and the targets no window holds whole. Only each
        request's new words are tokenized (one call for all), and a window's tokens come from its text's
        (hades_ray/detect/word_tokens.py)."""
        from hades_ray.detect.causal import assign_targets, text_windows

        asked = [k for k, (_, _, first, _) in enumerate(requests) if first]
        tok_words = self.text_tokens.of([requests[k][0] for k in asked], [requests[k][1] for k in asked])
        jobs, leftovers, windows = [], [], []
        for k, tokens in zip(asked, tok_words):
            row, words, first, last = requests[k]
            ranges = text_windows(self.tokenizer, words, self.window, self.stride, tokens)
            by_window: dict[int, _Job] = {}
            for j, (f, la, w) in enumerate(zip(first, last, assign_targets(ranges, first, last))):
                if w < 0:
                    leftovers.append((k, j))
                    continue
                if w not in by_window:
                    by_window[w] = _Job(row, ranges[w][0], [], np.zeros(0, dtype=int))
                    windows.append((by_window[w], (words, *ranges[w])))
                by_window[w].targets.append((k, j, f, la))
            jobs += [by_window[w] for w in sorted(by_window)]
        encoded = self.text_tokens.windows([job.row for job, _ in windows], [w for _, w in windows])
        for (job, _), (ids, owner) in zip(windows, encoded):
            job.ids, job.owner = ids, owner
        return jobs, leftovers

    def _run(self, jobs: list[_Job]) -> dict[tuple[int, int], torch.Tensor]:
        """One batched forward over the jobs' new tokens; the pooled state of each of their targets."""
        device = next(self.model.parameters()).device
        feeds, keeps = [], []
        for job in jobs:
            ids = job.ids[: int(np.flatnonzero(job.owner >= 0)[-1]) + 1]  # a trailing [SEP] is no context
            feeds.append(ids)
            keeps.append(self.caches.reuse(job.row, job.lo, ids, _first_target_token(job, len(ids))))
        states = self.caches.extend(self.model.backbone, [j.row for j in jobs], feeds, device)
        keys, spans = [], []  # each target's tokens, as indices into the forward's new tokens
        at = 0
        for job, state, keep, ids in zip(jobs, states, keeps, feeds):
            for k, j, first, last in job.targets:
                mine = job.owner[keep : len(ids)]
                own = np.flatnonzero((mine >= first) & (mine <= last))
                # no token of its own: the window's last token, as score's window_job
                spans.append(at + (own if len(own) else np.array([len(ids) - keep - 1])))
                keys.append((k, j))
            at += len(state)
        return dict(zip(keys, self._pool(torch.cat(states), spans))) if keys else {}

    def _pool(self, states: torch.Tensor, spans: list[np.ndarray]) -> torch.Tensor:
        """Every target's pooled state in one call: its tokens' states gathered into rows padded to the
        longest target (the padding masked, as ``pool_span`` pools a batch of windows)."""
        from hades_ray.detect.stable import pool_span

        width = max(len(span) for span in spans)
        index = torch.zeros((len(spans), width), dtype=torch.long)
        mask = torch.zeros((len(spans), width), dtype=torch.bool)
        for row, span in enumerate(spans):
            index[row, : len(span)], mask[row, : len(span)] = torch.from_numpy(span), True
        index, mask = index.to(states.device), mask.to(states.device)
        return pool_span(states[index], mask, self.model.pooling)

    def _leftovers(self, requests, leftovers) -> dict[tuple[int, int], float]:
        """Targets longer than a stride: their own online view, as ``score`` falls back to."""
        views = [{"words": requests[k][1], "start": requests[k][2][j], "end": requests[k][3][j]} for k, j in leftovers]
        return {key: float(p) for key, p in zip(leftovers, self.scorer.score_spans(views))}


def _first_target_token(job: _Job, length: int) -> int:
    """The first token of the job's targets: a cache reused past it would leave a target unscored."""
    owner = job.owner[:length]
    found = [int(np.flatnonzero(owner >= f)[0]) for _, _, f, _ in job.targets if (owner >= f).any()]
    return min(found, default=length - 1)


class ViewJudge:
    """p(H) of a growing text's new targets from each one's own online view (an encoder backbone, or a
    linear detector's features): a target's view is the words before it within the detector's window, so
    a call costs a forward per new target, whatever the text's length before it (``Scorer.score_spans``,
    each distinct view run once, forwards grouped by token length: a target's p(H) is the same bits
    alone, in any batch, and in ``score`` of the whole text)."""

    def __init__(self, scorer, threshold: float | None, words: str = "content", *, lang: Language):
        scorer.detector.require_online()
        self.scorer = scorer
        self.threshold = scorer.detector.threshold if threshold is None else float(threshold)
        self.words, self.lang = words, lang

    def begin(self, rows: int) -> None:
        """Nothing to reset: every view is encoded afresh."""

    def score_chunks(self, requests: list[tuple[int, str, str]]) -> list[list[dict]]:
        """For each ``(row, prefix, chunk)``: its judged words as ``{"start", "end", "word", "p"}``
        (characters in the chunk), scored in one batched call; an empty list where it has none
        (punctuation, stop words)."""
        return chunk_records(self, requests, self.words, self.lang)

    def score_targets(self, requests: list[tuple[int, list[str], list[int], list[int]]]) -> list[np.ndarray]:
        """For each ``(row, words, first, last)``: p(H) of the targets ``first[j]..last[j]`` of ``words``."""
        items = [
            {"words": words, "start": f, "end": la} for _, words, first, last in requests for f, la in zip(first, last)
        ]
        p, out, at = self.scorer.score_spans(items), [], 0
        for _, _, first, _ in requests:
            out.append(np.asarray(p[at : at + len(first)], dtype=np.float64))
            at += len(first)
        return out


def chunk_records(judge, requests: list[tuple[int, str, str]], words: str, lang: Language) -> list[list[dict]]:
    """The guard's question through ``judge.score_targets``: for each ``(row, prefix, chunk)``, the judged
    words of the chunk (``judged_words.chunk_items``) as ``{"start", "end", "word", "p"}``, characters in
    the chunk."""
    items = [chunk_items(prefix, chunk, words, lang=lang) for _, prefix, chunk in requests]
    asks = [
        (row, its[0]["words"] if its else [], [it["start"] for it in its], [it["end"] for it in its])
        for (row, _, _), its in zip(requests, items)
    ]
    scored = judge.score_targets(asks)
    return [
        [
            {"start": it["span"][0], "end": it["span"][1], "word": chunk[slice(*it["span"])], "p": float(v)}
            for it, v in zip(its, p)
        ]
        for (_, _, chunk), its, p in zip(requests, items, scored)
    ]
