"""Token-budget packing of REPLACE's and RANK's forwards: which sequences share a forward, and its shape.

Every forward holds at most ``max_batch_tokens`` (rows x width) tokens, filled across the documents
of a block. Two modes (``perturb.replace.packing`` / ``perturb.rank.packing``):

* ``exact``: only sequences of one length share a forward, with no padding: (rows <= budget // L, L).
  A row's result then does not depend on its neighbours where a row's arithmetic does not depend on
  the number of rows M. On CPU float32 that holds (tests/perturb/test_packing.py checks it on the micro
  models and the offline kit) except for the smallest products, so filler rows lift every forward and
  every vocabulary projection above them (hades_ray/models/fixed_rows.py). Padding does change the
  last bits on CPU (masked keys still change the attention's reduction), so exact never pads.
* ``binned``: widths are rounded up to a multiple of ``bin_tokens`` (padding under an attention mask),
  and every forward of a width has the same rows, budget // width, the last one filled with dummy
  rows: the shapes every kernel sees never depend on the neighbours, so a backend whose result depends
  on the shape (a GPU's GEMM picks its algorithm by shape) still gives the same bytes whatever the
  batch. Not byte-identical to ``exact``: the padding changes the last bits.
* ``auto`` (the default): binned on CUDA, exact elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from hades_ray.models.fixed_rows import MIN_FORWARD_TOKENS, MIN_HEAD_ROWS

MAX_BATCH_TOKENS = 32_768  # rows x width of one forward; hades_ray/plan counts the same forwards


@dataclass(frozen=True)
class Packing:
    """How one stage packs its forwards (see the module docstring)."""

    mode: str = "exact"  # exact | binned
    max_batch_tokens: int = MAX_BATCH_TOKENS
    bin_tokens: int = 64
    max_width: int | None = None  # the model's positions: a bin never grows past them

    @property
    def fixed_rows(self) -> bool:
        """Whether every forward of a width is padded with dummy rows to the same row count."""
        return self.mode == "binned"

    def width(self, length: int) -> int:
        """The width a sequence of ``length`` tokens is run at."""
        if self.mode == "exact":
            return length
        rounded = -(-length // self.bin_tokens) * self.bin_tokens
        return min(rounded, max(length, self.max_width)) if self.max_width else rounded

    def rows(self, width: int) -> int:
        """Rows of one forward of this width within the token budget."""
        return max(1, self.max_batch_tokens // max(width, 1))


def packing_of(section, device_type: str, max_width: int | None = None) -> Packing:
    """The packing a stage's config section (``perturb.replace`` or ``perturb.rank``) asks for on a device."""
    mode = section.packing
    if mode == "auto":
        mode = "binned" if device_type == "cuda" else "exact"
    return Packing(mode, section.max_batch_tokens, section.bin_tokens, max_width)


def model_positions(model) -> int | None:
    """How many positions a model's position embeddings cover (None where it does not say)."""
    return config_positions(model.config)


def config_positions(config) -> int | None:
    """``model_positions`` from a model's config alone (the planner reads configs, not weights)."""
    return getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)


def body_rows(count: int, packing: Packing, width: int) -> int:
    """Rows a forward of ``count`` real rows runs with: at least MIN_FORWARD_TOKENS tokens, and with
    fixed rows, always the width's full row count."""
    return max(count, -(-MIN_FORWARD_TOKENS // max(width, 1)), packing.rows(width) if packing.fixed_rows else 0)


def head_rows(count: int, packing: Packing, width: int) -> int:
    """Rows a vocabulary projection runs on for ``count`` real rows (one position each): at least
    MIN_HEAD_ROWS, and with fixed rows, always the width's full row count."""
    return max(count, MIN_HEAD_ROWS, packing.rows(width) if packing.fixed_rows else 0)
