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
