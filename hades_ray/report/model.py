"""What a section is made of: notes, tables and figures for the page, and the numbers for report.json."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[Any]]


@dataclass
class Figure:
    name: str  # file stem under R/figures/ and the image's id in the page
    title: str
    png: bytes


@dataclass
class Section:
    key: str
    title: str
    notes: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    numbers: dict[str, Any] = field(default_factory=dict)
    examples: list[dict] = field(default_factory=list)  # corpus text with marked spans (escaped when rendered)

    def to_json(self) -> dict:
        return {
            "title": self.title,
            "notes": self.notes,
            "numbers": self.numbers,
            "tables": [asdict(t) for t in self.tables],
            "figures": [f"figures/{f.name}.png" for f in self.figures],
        }


def fmt(value: Any, digits: int = 3) -> str:
    """A table cell: floats rounded, missing values as an en dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)
