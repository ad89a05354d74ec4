"""The paper's two studies as parts of one analyses folder: Fig. 6 (``reproduce context``, made by
``reproduce/context.py``) and the decoding study (``reproduce decoding``, ``reproduce/decoding.py``).

Each part is a step (hades_ray/pipeline/steps.py) in its own folder (``OUTPUT/context``,
``OUTPUT/decoding``): a rerun with the same config and inputs reads the recorded results back, one with
other settings or data stops unless ``--force``. Its results go to ``OUTPUT/context_length.json`` or
``OUTPUT/decoding.json`` (with the table and figure beside them), and ``OUTPUT/analyses.json`` gathers
the parts present, the file ``hades-ray report --analyses`` reads.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

from hades_ray.pipeline.laps import Laps
from hades_ray.pipeline.steps import Step, digest_of, must_run, run_step
from hades_ray.pipeline.storage import write_json_atomic

log = logging.getLogger(__name__)
ANALYSES = "analyses.json"
# analyses.json's key of each part, and the file that holds it
PARTS = {"decoding": "decoding.json", "context_length": "context_length.json"}


def part_digest(config, **settings) -> str:
    """What a part's results depend on: the resolved config (not how Ray is reached or sized) and the
    command's own settings."""
    resolved = {k: v for k, v in config.to_dict().items() if k != "ray"}
    return digest_of([resolved, settings])


def run_part(name: str, folder: Path, digest: str, make: Callable[[], dict], inputs: str = "", force: bool = False):
    """The part's results: recorded under ``folder`` when it finished with this digest and these inputs,
    else made now, with the wall seconds it took as ``seconds``."""

    def timed() -> dict:
        laps = Laps()
        results = make()
        results["seconds"] = round(laps.lap(), 1)
        log.info("%s: done in %.0f s", name, results["seconds"])
        return results

    step = Step(name, str(folder), digest, timed, inputs)
    if not must_run(step, force):
        log.info("%s: reusing the results recorded in %s (--force makes them again)", name, folder)
    else:
        log.info("%s: running", name)
    return run_step(step, force)


def write_analyses(output: Path) -> dict:
    """``OUTPUT/analyses.json`` from the parts' files in ``output``; ``seconds_total`` is their seconds summed
    (each part's own run, a reused one included)."""
    analyses: dict = {}
    for key, name in PARTS.items():
        if (output / name).is_file():
            analyses[key] = json.loads((output / name).read_text(encoding="utf-8"))
    analyses["seconds_total"] = round(sum(analyses[k].get("seconds", 0) for k in PARTS if k in analyses), 1)
    write_json_atomic(output / ANALYSES, analyses)
    log.info("analyses written to %s (%s)", output / ANALYSES, ", ".join(k for k in PARTS if k in analyses))
    return analyses


def analyses_markdown(results: dict, title: str) -> str:
    """A page of both parts' tables (the results page the jobs/ recipe records)."""
    from hades_ray.reproduce.context import context_markdown
    from hades_ray.reproduce.decoding import decoding_markdown

    parts = {k: results[k]["seconds"] for k in PARTS if k in results}
    lines = [f"# {title}", ""]
    lines.append(
        "Wall seconds of the run that made each part (a reused part keeps its own): "
        + ", ".join(f"{k} {v:.0f}" for k, v in parts.items())
        + "."
        + (f" Context-length labels: {results['context_length']['labels']}." if "context_length" in results else "")
    )
    if "decoding" in results:
        lines += ["", *decoding_markdown(results["decoding"])]
    if "context_length" in results:
        c = results["context_length"]
        lines += ["", f"## Context length, the paper's Fig. 6 ({c['train']} train / {c['test']} test instances, "
                  f"{c['epochs']} epochs, {len(c['trials'])} trials in one Ray Tune grid, {c['seconds']:.0f} s)", "",
                  f"Backbone: `{c['backbone']}` ({c.get('backbone_from', 'the config')}).", "",
                  *context_markdown(c), "", "![Fig. 6](context_length.png)"]  # fmt: skip
    return "\n".join(lines) + "\n"
