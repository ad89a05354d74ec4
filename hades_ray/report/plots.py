"""matplotlib figures as PNG bytes: the page embeds them as ``data:`` URIs, report.md links the files."""

from __future__ import annotations

import base64
import io

import numpy as np

H_COLOR, N_COLOR = "#c0392b", "#2e86c1"
SERIES = ("#2e86c1", "#c0392b", "#27ae60", "#8e44ad", "#f39c12", "#7f8c8d", "#16a085", "#d35400")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # no display: the report is built on servers and in CI
    import matplotlib.pyplot as plt

    return plt


def new_figure(columns: int = 1, width: float = 5.0, height: float = 3.2):
    plt = _pyplot()
    fig, axes = plt.subplots(1, columns, figsize=(width * columns, height), squeeze=False)
    return fig, list(axes[0])


def to_png(fig) -> bytes:
    """The figure as PNG bytes (closed afterwards, so long reports do not pile up figures)."""
    plt = _pyplot()
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=90, metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def histogram(ax, values, title: str, xlabel: str, integer: bool = False) -> None:
    values = np.asarray(values, dtype=float)
    if integer and values.size:
        bins = np.arange(values.min() - 0.5, values.max() + 1.5)
    else:
        bins = min(30, max(5, values.size // 4))
    ax.hist(values, bins=bins, color=SERIES[0], edgecolor="white")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("count")


def labelled_histograms(ax, by_label: dict[str, np.ndarray], title: str, xlabel: str, bins) -> None:
    """Overlaid histograms of one value per label (H red, N blue), as densities."""
    colors = {"H": H_COLOR, "N": N_COLOR}
    for label, values in by_label.items():
        if len(values):
            ax.hist(
                values, bins=bins, alpha=0.55, density=True, color=colors.get(label), label=f"{label} ({len(values)})"
            )
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.legend(fontsize=8)


def grouped_bars(ax, categories: list[str], groups: dict[str, list[float]], title: str, ylabel: str) -> None:
    """Bars of several groups (e.g. H and N) side by side for each category."""
    x = np.arange(len(categories))
    width = 0.8 / max(len(groups), 1)
    colors = {"H": H_COLOR, "N": N_COLOR}
    for i, (name, values) in enumerate(groups.items()):
        ax.bar(x + (i - (len(groups) - 1) / 2) * width, values, width, label=name, color=colors.get(name, SERIES[i]))
    ax.set_xticks(x, categories, rotation=45, ha="right", fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)


def stacked_bars(ax, categories: list[str], layers: dict[str, list[float]], title: str, ylabel: str) -> None:
    """One bar per category, split into ``layers`` from the bottom up."""
    bottom = np.zeros(len(categories))
    for i, (name, values) in enumerate(layers.items()):
        values = np.asarray(values, dtype=float)
        ax.bar(categories, values, bottom=bottom, label=name, color=SERIES[i % len(SERIES)])
        bottom += values
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
