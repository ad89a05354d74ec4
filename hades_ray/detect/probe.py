"""The probe: a span classifier on a causal generator's own hidden states, so that judging the words a
generator writes costs no second forward (``hades_ray/guard/probe.py`` reads the states ``generate``
computes anyway).

A probe is an online span classifier (``type: transformer``, ``probe: true`` in ``detector.json``) whose
backbone is the generator's base model, frozen whole, and whose window is the generator's whole context
(its position count, less ``POSITION_MARGIN``): a word's view is all the text before it, as the generator
saw it when writing the word. ``detect.layer`` picks the hidden state it pools (-1: the last). It trains
through the span store like any frozen detector (``hades-ray train --detector probe``), and ``score``,
``stream`` and the guard read it as the online causal detector it is.
"""

from __future__ import annotations

import dataclasses

from hades_ray.detect.settings import TOKENS
from hades_ray.errors import ConfigError

PROBE = "probe"
POSITION_MARGIN = 16  # tokens a cut view may gain over its counted window (probe_config)


def is_probe(settings: dict) -> bool:
    """Whether a detector's ``detector.json`` describes a probe."""
    return bool(settings.get(PROBE))


def generator_config(backbone: str, revision: str | None = None):
    """The ``transformers`` config of a backbone reference (no weights)."""
    from transformers import AutoConfig

    from hades_ray.models.registry import resolve_model

    return AutoConfig.from_pretrained(resolve_model(backbone), revision=revision)


def probe_config(config):
    """``config`` as a probe trains: its backbone (``detect.backbone``, else ``models.encoder``) must be a
    causal LM; frozen whole; the window its whole context in tokens. Refused in one line otherwise."""
    from hades_ray.detect.causal import is_causal_config
    from hades_ray.perturb.packing import config_positions

    d = config.detect
    backbone = d.backbone or config.models.encoder
    described = generator_config(backbone, config.models.revisions.get(backbone))
    if not is_causal_config(described):
        raise ConfigError(
            f"detect.backbone={backbone}: a probe reads a generator's own states; name a causal LM "
            "(detect.backbone=local:gpt2)"
        )
    # A view cut inside the text starts at a word without its leading space, which a byte-level BPE may
    # split into a few more tokens than ``spans.token_range_of`` counted in the whole text: the window
    # leaves them room below the position count (257 tokens for a 256 window on the demo dataset).
    window = min(int(config_positions(described) or 1024), 1_000_000) - POSITION_MARGIN
    detect = dataclasses.replace(d, backbone=backbone, freeze="all", window=window, window_unit=TOKENS)
    return dataclasses.replace(config, detect=detect)
