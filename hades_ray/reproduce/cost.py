"""What the grid costs before it runs: per trial, epochs x training examples x tokens per example.

Tokens per example are counted with each backbone's own tokenizer on the training file (the text a
detector reads: every word offline, the words up to the span's end online, at most ``detect.window``
tokens); LR and SVM run their MLM once over each span's ``detect.feature_window``. A tokenizer that cannot
be loaded here (a hub model on an offline machine) is replaced by 1.3 tokens per word, and the line says
so with ``~``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from hades_ray.config import HadesConfig
from hades_ray.io.hades_format import Instance
from hades_ray.reproduce.grid import Cell, Grid, cell_config

log = logging.getLogger(__name__)
TOKENS_PER_WORD = 1.3  # English WordPiece/BPE on Wikipedia text, when no tokenizer is at hand


@dataclass
class CellCost:
    cell: Cell
    model: str
    epochs: int
    examples: int
    tokens_per_example: float
    estimated: bool  # True: no tokenizer here, TOKENS_PER_WORD instead

    @property
    def train_tokens(self) -> float:
        return self.epochs * self.examples * self.tokens_per_example


def _texts(instances: list[Instance], mode: str) -> list[str]:
    return [" ".join(i.words if mode == "offline" else i.words[: i.end + 1]) for i in instances]


def grid_tokenizer(reference: str):
    """The tokenizer of ``reference``, or None (with one line saying why) when it cannot load here."""
    from hades_ray.models.registry import ModelNotFoundError, load_tokenizer

    try:
        return load_tokenizer(reference)
    except (ModelNotFoundError, ValueError, OSError) as error:
        log.info("counting %s tokens as %.1f per word: %s", reference, TOKENS_PER_WORD, error)
        return None


def tokens_per_example(tokenizer, texts: list[str], cap: int) -> tuple[float, bool]:
    """Mean tokens per text, at most ``cap`` each; (estimate, True) without a tokenizer."""
    if not texts:
        return 0.0, False
    if tokenizer is None:
        lengths = [TOKENS_PER_WORD * len(t.split()) + 2 for t in texts]
        return sum(min(cap, n) for n in lengths) / len(texts), True
    # Truncated at the cap as training truncates them (and without the tokenizer's over-length warning).
    encoded = tokenizer(texts, add_special_tokens=True, truncation=True, max_length=cap)["input_ids"]
    return sum(len(ids) for ids in encoded) / len(texts), False


def grid_cost(base: dict, grid: Grid, cells: list[Cell], train: list[Instance]) -> list[CellCost]:
    # One tokenizer per model, loaded (or found missing) once: trials share backbones, and rows share the MLM.
    costs, seen, tokenizers = [], {}, {}
    for cell in cells:
        config: HadesConfig = cell_config(base, grid, cell)
        d = config.detect
        linear = grid.row(cell.row).detector != "transformer"
        model = config.models.mlm if linear else (d.backbone or config.models.encoder)
        cap = d.feature_window if linear else d.window
        key = (model, cell.mode if not linear else "offline", cap)
        if key not in seen:
            if model not in tokenizers:
                tokenizers[model] = grid_tokenizer(model)
            seen[key] = tokens_per_example(tokenizers[model], _texts(train, key[1]), cap)
        per_example, estimated = seen[key]
        costs.append(CellCost(cell, model, 1 if linear else d.epochs, len(train), per_example, estimated))
    return costs


def format_cost(costs: list[CellCost]) -> str:
    """The table printed before the grid starts, ending with the total."""
    lines = [
        f"{'trial':<28} {'model':<24} {'epochs':>6} {'examples':>9} {'tokens/ex':>10} {'train tokens':>14}",
    ]
    for c in costs:
        mark = "~" if c.estimated else " "
        lines.append(
            f"{c.cell.key:<28} {c.model[:24]:<24} {c.epochs:>6} {c.examples:>9} "
            f"{mark}{c.tokens_per_example:>9.1f} {c.train_tokens:>14,.0f}"
        )
    total = sum(c.train_tokens for c in costs)
    lines.append(
        f"{len(costs)} trials, {total:,.0f} training token-forwards in all (trials x epochs x examples x tokens; "
        "LR/SVM: one MLM pass over each span's feature window)"
    )
    if any(c.estimated for c in costs):
        lines.append(f"~: tokenizer not available here, {TOKENS_PER_WORD} tokens per word assumed")
    return "\n".join(lines)
