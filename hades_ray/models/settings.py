"""The ``models`` config section, and the form of a model reference: checked without reading a file
or importing a model library, so that building a config stays cheap on every worker.

A reference is a hub id (``org/name``), a folder, or ``local:NAME`` (``$HADES_RAY_HOME/models/NAME``);
``models/registry.py`` turns it into something ``from_pretrained`` loads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from hades_ray.config_keys import key
from hades_ray.errors import ConfigError

LOCAL_PREFIX = "local:"
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$")
LOCAL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
COMMIT = re.compile(r"^[0-9a-f]{40}$")
DTYPES = ("float32", "bfloat16", "float16", "auto")  # auto: bf16 on a GPU, float32 on a CPU (models/registry.py)
# Revisions of the config built last in this process (load_config / config_from_dict, which every
# actor calls), so that loaders called with a bare reference still load the pinned commit.
_PINNED: dict[str, str] = {}


@dataclass
class ModelsConfig:
    """Models by hub id or local path; ``local:NAME`` means ``$HADES_RAY_HOME/models/NAME``."""

    mlm: str = "local:mlm"  # REPLACE and the feature detectors' word probabilities
    causal_lm: str = key("local:gpt2", help="causal LM: hub id, folder or local:NAME")  # RANK by perplexity
    encoder: str = "local:minilm"  # detector backbone and paraphrase similarity
    # Hub id -> the commit it loads (40 hex digits), so a preset means the same weights next year.
    revisions: dict[str, str] = field(default_factory=dict)

    def validate(self) -> None:
        for name in ("mlm", "causal_lm", "encoder"):
            problem = reference_problem(getattr(self, name))
            if problem:
                raise ConfigError(f"models.{name}: {problem}")
        for reference, revision in self.revisions.items():
            problem = revision_problem(reference, revision)
            if problem:
                raise ConfigError(f"models.revisions.{reference}: {problem}")


def looks_like_path(reference: str) -> bool:
    """Whether ``reference`` names a folder rather than a hub id (``org/name`` or ``name``)."""
    if reference.startswith((".", "/", "~")) or "\\" in reference:
        return True
    parts = reference.split("/")
    # "out/mymodel" where out/ exists is a mistyped folder, not the hub model of a user called "out".
    return len(parts) > 2 or Path(reference).exists() or (len(parts) == 2 and Path(parts[0]).is_dir())


def reference_problem(reference: str) -> str:
    """What is wrong with a reference's form ("" when nothing is); no file is read."""
    if not isinstance(reference, str) or not reference.strip():
        return "empty model reference; use a hub id, a folder or local:NAME"
    if reference.startswith(LOCAL_PREFIX):
        name = reference[len(LOCAL_PREFIX) :]
        if not LOCAL_NAME.match(name) or name in (".", ".."):
            return (
                f"{reference!r}: local: names one folder of $HADES_RAY_HOME/models "
                "(letters, digits, '.', '_', '-'; no path separators)"
            )
        return ""
    if looks_like_path(reference) or HUB_ID.match(reference):
        return ""
    return f"{reference!r} is neither a folder nor a hub id (ORG/NAME)"


def revision_problem(reference: str, revision: str) -> str:
    """What is wrong with one ``models.revisions`` entry ("" when nothing is)."""
    if not HUB_ID.match(str(reference)) or str(reference).startswith(LOCAL_PREFIX):
        return "revisions pin hub ids only"
    if not COMMIT.match(str(revision)):
        return f"{revision!r} is not a commit (40 lowercase hex digits); a branch or tag name does not pin"
    return ""


def pin_revisions(revisions: dict[str, str]) -> None:
    """Make ``revisions`` (hub id -> commit) the pins of this process; called for every config built."""
    _PINNED.clear()
    _PINNED.update(revisions)


def model_revision(reference: str) -> str | None:
    """The pinned commit of a hub id, or None (local models and unpinned hub ids)."""
    return _PINNED.get(reference)
