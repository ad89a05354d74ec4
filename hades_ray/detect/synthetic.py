"""Small synthetic inputs for tests and smoke runs: labelled instances with a learnable signal,
and a perturbation pool laid out like ``hades_ray.perturb``'s output."""

from __future__ import annotations

import random

from hades_ray.io.hades_format import Instance

_SUBJECTS = ["the river", "a painter", "the city council", "her brother", "the old bridge", "this museum"]
_VERBS = ["was built in", "moved to", "is known for", "was founded by", "lies near", "opened in"]
_PLACES = ["paris", "london", "berlin", "madrid", "vienna", "rome"]
_ODD = ["banana", "trombone", "seventeen", "purple", "sandwich", "volcano"]


def toy_instances(n: int, seed: int = 0) -> list[Instance]:
    """Sentences whose span is a plausible place (label 0) or an odd word (label 1)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        label = i % 2
        words = (f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)}").split()
        start = len(words)
        words.append(rng.choice(_ODD if label else _PLACES))
        words += ["and", "it", "remained", "there", "for", "many", "years", "."]
        out.append(Instance(words=words, start=start, end=start, label=label, extra={"id": f"toy-{i}"}))
    return out


def random_detector(
    directory,
    backbone: str,
    mode: str,
    window: int | None = None,
    seed: int = 0,
    pooling: str = "max",
    layer: int = -1,
    probe: bool = False,
) -> str:
    """A detector folder on ``backbone`` with a random head (``seed``'s: speed and plumbing do not depend on
    its weights), exported with the config the way ``hades-ray train`` exports one; ``window``: the tokens
    it sees (``detect.window``'s default when None); ``pooling``: max or mean over a span's tokens;
    ``layer``: the hidden state pooled (``detect.layer``, recorded only where it is not -1); ``probe``:
    marked a probe (``detect/probe.py``: ``backbone`` must then be a causal generator, ``window`` its
    context less ``POSITION_MARGIN``). The tests' and the benchmarks' detector folders."""
    import torch

    from hades_ray.config import HadesConfig, save_config
    from hades_ray.detect.model import build_classifier, export_detector, trainable_state

    config = HadesConfig()
    settings = {"backbone": backbone, "revision": None, "mode": mode, "window": window or config.detect.window}
    settings |= {"pooling": pooling, "mlp_layers": 2, "freeze": "all"} | ({"layer": layer} if layer != -1 else {})
    settings |= {"probe": True} if probe else {}
    torch.manual_seed(seed)
    tokenizer, model = build_classifier(backbone, settings)
    export_detector(directory, trainable_state(model), settings, tokenizer)
    save_config(config, directory)
    return str(directory)
