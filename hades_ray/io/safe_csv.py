"""CSV cells that a spreadsheet never runs as formulas, and ids that never need such a guard.

Spreadsheets treat a cell as a formula when it starts with ``= + - @`` (also after a tab or a carriage
return, and in their full-width forms ``＝＋－＠``, which some of them fold to ASCII). Every string cell
this project writes to a CSV goes through ``guard_cell``: such a cell gets a leading apostrophe, the
usual neutral prefix. Ids are never altered that way (an altered id would no longer match when its
judgments come back), so ids that would need it are refused where they enter the project instead.
"""

from __future__ import annotations

import csv
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from hades_ray.pipeline import storage

FORMULA_STARTS = ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20")
CONTROL_STARTS = ("\t", "\r", "\n")
# Leading characters a spreadsheet may skip before it looks for a formula prefix.
_SKIPPED = " \t\r\n\u00a0\u3000"


def needs_guard(value: str) -> bool:
    """Whether a spreadsheet could read ``value`` as a formula."""
    if value.startswith(CONTROL_STARTS):
        return True
    return value.lstrip(_SKIPPED).startswith(FORMULA_STARTS)


def guard_cell(value):
    """``value`` with a leading apostrophe where it could run as a formula; non-strings unchanged."""
    return "'" + value if isinstance(value, str) and needs_guard(value) else value


def unsafe_id_reason(value: str, field: str = "id") -> str:
    """Why ``value`` cannot be an id ("" when it can): ids are written to CSVs unaltered."""
    if needs_guard(value):
        return (
            f"{field} {value!r} starts with {value[:1]!r}, which spreadsheets read as a formula; "
            "ids are never altered, so such ids are refused (rename it)"
        )
    if any(unicodedata.category(c) in ("Cc", "Cf") for c in value):
        return f"{field} {value!r} contains a control character; ids are never altered, so it is refused"
    return ""


def write_guarded_csv(rows: Iterable[dict], path: str | Path, columns: list[str]) -> Path:
    """Write ``rows`` to a new CSV at ``path``, atomically, every string cell guarded; an existing
    ``path`` raises ``FileExistsError``."""
    path = Path(path)
    with storage.open_atomic(path, newline="", replace=False) as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, quoting=csv.QUOTE_ALL, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: guard_cell(row.get(k, "")) for k in columns})
    return path
