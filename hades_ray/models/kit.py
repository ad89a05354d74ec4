"""The offline model kit's layout, settings and text: ``$HADES_RAY_HOME/models/{mlm,gpt2}``, each finished
folder marked by its ``build_info.json``; what building (build.py) and evaluating (quality.py) share.

The kit's text is the demo corpus's leads, split into train and held-out by a hash of the record id, so the
split never depends on corpus order or on which records a later corpus version adds; only the held-out
split is kept out of training, nothing else.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from hades_ray.models.train_gpt2 import Gpt2TrainConfig
from hades_ray.models.train_mlm import MlmTrainConfig

MODEL_NAMES = ("mlm", "gpt2")
INFO_FILE = "build_info.json"
HELDOUT_FRACTION = 0.1


@dataclass
class KitConfig:
    """Everything a build depends on; stored (resolved) in each model's ``build_info.json``."""

    mlm: MlmTrainConfig = field(default_factory=MlmTrainConfig)
    gpt2: Gpt2TrainConfig = field(default_factory=Gpt2TrainConfig)
    heldout_fraction: float = HELDOUT_FRACTION
    # Each measure on at least 500 held-out leads (the demo corpus holds 994): one masked word per lead, one
    # (original, swapped) pair per lead, and all of them for the perplexity.
    mlm_eval_texts: int = 500
    gpt2_pairs: int = 500
    swapped_words: int = 1  # RANK tells a lead from one with a replaced span: one content word, from another lead
    baseline: bool = False  # also score MiniLM with an untrained head (``models evaluate`` does)
    # The paper's models, measured beside the kit's where cached: kit model name -> hub id. The CLI sets
    # them from ``--preset paper`` (models sit below the config, so they are given, not looked up).
    paper_models: dict[str, str] = field(default_factory=dict)
    seed: int = 0


def kit_config(
    seed: int = 0,
    mlm_minutes: float | None = None,
    gpt2_minutes: float | None = None,
    mlm_steps: int | None = None,
    gpt2_steps: int | None = None,
) -> KitConfig:
    """The default kit (fixed steps, no time box) with the CLI's overrides; minutes > 0 add a time box."""
    config = KitConfig(seed=seed)
    config.mlm.seed = config.gpt2.seed = seed
    for limits, minutes, steps in (
        (config.mlm.limits, mlm_minutes, mlm_steps),
        (config.gpt2.limits, gpt2_minutes, gpt2_steps),
    ):
        if minutes is not None:
            limits.max_seconds = minutes * 60 if minutes > 0 else None
        if steps is not None:
            limits.max_steps = steps
    return config


def models_root(home: str | Path | None = None) -> Path:
    from hades_ray.models.registry import hades_home

    return Path(home).expanduser() / "models" if home else hades_home() / "models"


def is_built(directory: Path) -> bool:
    """A finished model folder: a config and the completion marker."""
    return (directory / "config.json").is_file() and (directory / INFO_FILE).is_file()


def model_status(home: str | Path | None = None) -> dict[str, dict]:
    """Per model: its folder, whether it is built, and its build info when it is."""
    root = models_root(home)
    status = {}
    for name in MODEL_NAMES:
        directory = root / name
        built = is_built(directory)
        info = json.loads((directory / INFO_FILE).read_text()) if built else None
        status[name] = {"path": str(directory), "built": built, "info": info}
    return status


def is_heldout(record_id: str, fraction: float = HELDOUT_FRACTION) -> bool:
    """Whether a record belongs to the held-out split (stable across runs and machines)."""
    digest = hashlib.sha256(record_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def split_texts(records: list[dict], fraction: float = HELDOUT_FRACTION) -> tuple[list[str], list[str]]:
    """(train texts, held-out texts) of the records with non-empty text, each in input order."""
    train, heldout = [], []
    for record in records:
        text = (record.get("text") or "").strip()
        if text:
            (heldout if is_heldout(record["id"], fraction) else train).append(text)
    return train, heldout


def demo_split(fraction: float = HELDOUT_FRACTION) -> tuple[list[str], list[str]]:
    """The demo corpus split into (train, held-out) leads."""
    from hades_ray.io.demo_corpus import read_demo_records

    return split_texts(read_demo_records(), fraction)


def heldout_word_prefixes(words: int) -> list[str]:
    """A text of held-out demo leads (the kit never trained on them) joined until it has ``words``
    space-separated words, as its ``words`` prefixes by word, each ending in a space (a stream's feeds)."""
    pieces: list[str] = []
    for lead in demo_split()[1]:
        pieces += lead.split()
        if len(pieces) >= words:
            break
    return [" ".join(pieces[: k + 1]) + " " for k in range(words)]


def heldout_prompts(path: str | Path, nlp, skip: int, count: int, fits) -> tuple[list[dict], int]:
    """Prompts the kit's generator never trained on: the first two sentences (``nlp``'s) of ``count``
    held-out records of a JSONL file after line ``skip``, whose prompt ``fits`` (the generator's context
    with its new tokens); records of fewer than three sentences have nothing to say beyond the prompt.
    Also how many did not fit."""
    prompts, too_long = [], 0
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle):
            record = json.loads(line)
            if number < skip or not is_heldout(str(record["id"])):
                continue
            sentences = [s.text.strip() for s in nlp(record["text"][:2000]).sents]
            if len(sentences) < 3:
                continue
            prompt = " ".join(sentences[:2])
            if fits(prompt):
                prompts.append({"id": record["id"], "prompt": prompt})
            else:
                too_long += 1
            if len(prompts) == count:
                break
    return prompts, too_long
