"""The guard's judges: an online detector that gives p(H) of a word from its left context only.

Every judge has ``threshold``, ``begin(rows)`` (a new batch of texts) and ``score_chunks(requests)``,
called once per generation step with every waiting row's ``(row, prefix, chunk)``:

- ``ViewJudge`` (hades_ray/detect/incremental.py): a span classifier on an encoder (MiniLM, RoBERTa).
  Each word needs its own forward over its left-context view; all rows' pending words of a step go
  through ``Scorer.score_spans`` together (forwards grouped by token length, so a word's p(H) is the
  same bits alone or in any batch).
- ``CausalJudge`` (hades_ray/detect/incremental.py): a causal backbone, scored incrementally with each
  row's key/value cache: about one forward per generated token.
- ``HttpJudge`` (hades_ray/guard/http_judge.py): a detector served by ``hades-ray serve``.
- ``ProbeGuardJudge`` (hades_ray/guard/probe_judge.py): a probe on the generator itself, reading the
  states the generator's own forwards compute: no forward of its own.
"""

from __future__ import annotations


from hades_ray.text.languages import Language


def open_judge(
    guard: str,
    threshold: float | None,
    words: str = "content",
    device: str = "cpu",
    stride: int = 0,
    *,
    lang: Language,
    generator=None,
):
    """The judge for ``--guard``: a served detector's URL, or an online detector folder. A probe whose
    backbone is ``generator`` (the loaded causal LM) reads the generator's own states (no second forward,
    ``guard/probe_judge.py``); any other detector is scored by the route it takes online
    (``Detector.route``): windows (a causal backbone, a window in tokens) get the cached judge, with
    ``stride`` as ``score.stride``; views score each word's own view. ``lang``: the generated text's
    language (a served detector cuts words in the service's)."""
    from hades_ray.detect.detector import Detector
    from hades_ray.guard.http_judge import HttpJudge, is_url
    from hades_ray.guard.probe_judge import probe_guard_judge

    if is_url(guard):
        return HttpJudge(guard, threshold)
    detector = Detector.open(guard)
    detector.require_online()
    if generator is not None:
        judge = probe_guard_judge(detector, generator, threshold, words, lang=lang)
        if judge is not None:
            return judge
    return scorer_judge(detector.scorer("online", device, stride=stride), threshold, words, lang=lang)


def scorer_judge(scorer, threshold: float | None, words: str = "content", *, lang: Language):
    """The judge over an online ``Scorer`` already loaded: ``Scorer.incremental``'s (the cached causal
    judge where it scores a window per forward, else each word's own view)."""
    return scorer.incremental(threshold, words, lang=lang)


def chunk_p(scored: list[dict]) -> float | None:
    """A chunk's p(H): its most suspicious judged word's (``None`` when nothing in it was judged)."""
    return max((w["p"] for w in scored), default=None)


class RecordingJudge:
    """Any judge, with every call's ``(prefix, chunk, scored words)`` kept in ``calls``: what it said about
    which text, for checking its p(H) against ``hades-ray score`` on the same text (tests, benchmarks)."""

    def __init__(self, judge):
        self.judge, self.calls = judge, []

    @property
    def threshold(self) -> float:
        return self.judge.threshold

    def begin(self, rows: int) -> None:
        self.judge.begin(rows)

    def score_chunks(self, requests: list[tuple[int, str, str]]) -> list[list[dict]]:
        scored = self.judge.score_chunks(requests)
        self.calls += [(prefix, chunk, words) for (_, prefix, chunk), words in zip(requests, scored)]
        return scored


def score_differences(scorer, calls: list[tuple[str, str, list[dict]]], threshold: float, lang: Language) -> dict:
    """Each recorded word's p(H) against ``scorer`` (a ``Scorer``: what ``hades-ray score`` computes) on
    the same text in ``lang`` (the judge's), the chunk's words as targets: how many, max |diff|, and flags
    that differ. A word is
    the text's unit holding its first character (a chunk that continues the prompt's last word is
    judged as that whole word)."""
    from hades_ray.score.words import Targets, find_targets

    texts, recorded = [], []
    for prefix, chunk, words in calls:
        if not words:
            continue
        t = find_targets(prefix + chunk, "all", lang=lang)
        mine = {}
        for w in words:
            at = len(prefix) + w["start"]
            unit = next((f for f in t.first if t.starts[f] <= at < t.ends[f]), None)
            mine[unit] = w["p"]
        first = [f for f in t.first if f in mine]
        texts.append(Targets(t.words, t.starts, t.ends, first, first))
        recorded.append(mine)
    diffs, flips, unmatched = [0.0], 0, 0
    for t, p, mine in zip(texts, scorer.score(texts), recorded):
        for f, value in zip(t.first, p):
            diffs.append(abs(float(value) - mine[f]))
            flips += (float(value) >= threshold) != (mine[f] >= threshold)
        unmatched += None in mine  # a word score does not know as a target (none expected)
    return {"words": len(diffs) - 1, "max_abs_diff": max(diffs), "flags_differing": flips, "unmatched": unmatched}
