"""Markdown pipe tables: the one writer of the tables of metrics.md, the reports and jobs/results/ (it imports
nothing from the package)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def pipe_table(columns: Sequence[str], rows: Iterable[Sequence], align: str = "") -> list[str]:
    """The lines of a markdown table: the header, its rule and one line per row. Cells are shown with
    ``str`` as given (the caller formats numbers), an empty one as a blank; an ``r`` at a column's place
    in ``align`` right-aligns that column (``---:``)."""

    def line(cells: Sequence) -> str:
        return "|" + "|".join(f" {cell} " if str(cell) else " " for cell in cells) + "|"

    rule = "|" + "".join("---:|" if a == "r" else "---|" for a in align.ljust(len(columns), "l"))
    return [line(columns), rule, *(line(row) for row in rows)]


def spec_table(spec: dict, items, align: str = "") -> list[str]:
    """A pipe table from ``spec``: column header -> a function of one of ``items`` giving its cell; a results
    page's tables without a hand-built row per item."""
    return pipe_table(list(spec), ([cell(item) for cell in spec.values()] for item in items), align=align)


def cell(key: str, fmt: str = ""):
    """A ``spec_table`` column: an item's ``key`` formatted with ``fmt`` (``","``, ``".1f"``, ...); None, a
    figure that does not apply, is a dash."""
    return lambda item: "-" if item[key] is None else format(item[key], fmt)


def page(*blocks) -> str:
    """A results page: ``blocks`` (a line, or a list of lines such as a ``spec_table``) with a blank line
    between each two, ending in a newline; a None block is left out."""
    return "\n\n".join(b if isinstance(b, str) else "\n".join(b) for b in blocks if b is not None) + "\n"
