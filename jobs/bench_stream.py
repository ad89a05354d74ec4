"""A stream's cost per feed as its text grows, before and after issue 46, side by side in one run: held-out
leads fed a word at a time to online span classifiers on MiniLM and the kit's GPT-2, ``words="all"``.
Before: each feed scores the whole text so far (``Detector.score``), keeping the words after the last
call's; after: ``Detector.stream().feed``. At each length an untimed feed up to a few words before it,
then ``--feeds`` timed single-word feeds. Writes jobs/results/bench_stream.{json,md}.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jobs.bench_common import kit_or_micro, machine_words, options, peak_rss_mib, scratch, spec_table, write_results  # noqa: E402, E501


class BeforeStream:
    """The stream before issue 46: every feed scores the whole text so far."""

    def __init__(self, det):
        self.det, self.since = det, 0

    def feed(self, text: str, final: bool = False) -> list[dict]:
        words = [w for w in self.det.score(text, words="all")["words"] if w["start"] >= self.since]
        words = [w for w in words if final or w["end"] < len(text)]
        self.since = words[-1]["end"] if words else self.since
        return words


ARMS = {"before": BeforeStream, "after": lambda det: det.stream(words="all")}


def detectors(kit: bool) -> dict[str, str]:
    """Random-head online detectors (speed does not depend on the head's weights), window 160 tokens."""
    from hades_ray.detect.synthetic import random_detector
    from hades_ray.models.registry import minilm_path, resolve_model

    folder = scratch("hades_bench_stream_")
    gpt2 = resolve_model("local:gpt2")
    return {
        "encoder (MiniLM)": random_detector(folder / "minilm", str(minilm_path()), "online", 160),
        f"causal ({'kit' if kit else 'micro'} GPT-2)": random_detector(folder / "gpt2", str(gpt2), "online", 160),
    }


def feed_costs(stream, prefixes: list[str], at: int, feeds: int) -> list[float]:
    """Milliseconds of each of ``feeds`` single-word feeds of a new ``stream`` ending at word ``at``, after an
    untimed feed of the text before them."""
    stream.feed(prefixes[at - feeds - 1])
    costs = []
    for k in range(at - feeds, at):
        started = time.perf_counter()
        stream.feed(prefixes[k])
        costs.append((time.perf_counter() - started) * 1000)
    return costs


def markdown(report: dict) -> str:
    at = report["at"]
    rows = [(name, arm, [cells[str(n)]["median_ms"] for n in at]) for name, arms in report["detectors"].items()
            for arm, cells in arms.items()]  # fmt: skip
    spec = {"detector": lambda r: r[0], "arm": lambda r: r[1]}
    spec |= {f"ms per feed at {n} words": lambda r, k=k: f"{r[2][k]:.1f}" for k, n in enumerate(at)}
    spec[f"{at[-1]} / {at[0]}"] = lambda r: f"{r[2][-1] / r[2][0]:.2f}x"
    return "\n".join([
        "# A stream's cost per feed as its text grows\n",
        f"On {machine_words(report)}; peak memory {report['peak_rss_mib']} MiB. The median of {report['feeds']} "
        "single-word feeds at each length; the kit's GPT-2 where it is built, else the micro one.\n",
        *spec_table(spec, rows), "",
    ])  # fmt: skip


def main() -> None:
    flags = {"--arms": (list(ARMS), "which streams to time", {"choices": list(ARMS)})}
    flags["--at"] = ([50, 300, 1000], "text lengths in words")
    flags["--feeds"] = (5, "timed single-word feeds at each length")
    args = options(__doc__.splitlines()[0], flags)
    import torch

    from hades_ray import Detector
    from hades_ray.models.kit import heldout_word_prefixes

    torch.set_num_threads(1)  # as detect.torch_threads: what Detector.score and the stream run with
    kit = kit_or_micro()
    prefixes = heldout_word_prefixes(max(args.at))
    report = {"at": args.at, "feeds": args.feeds, "kit": kit, "detectors": {}}
    for name, folder in detectors(kit).items():
        det = Detector.open(folder)
        for arm in args.arms:
            cells = report["detectors"].setdefault(name, {}).setdefault(arm, {})
            for n in args.at:
                costs = feed_costs(ARMS[arm](det), prefixes, n, args.feeds)
                cells[str(n)] = {"median_ms": round(statistics.median(costs), 2), "ms": [round(c, 2) for c in costs]}
                print(name, arm, n, cells[str(n)], flush=True)
    report["peak_rss_mib"] = round(peak_rss_mib())
    write_results("bench_stream", report, markdown(report))


if __name__ == "__main__":
    main()
