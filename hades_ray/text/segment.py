"""Segmentation that needs no model: the first paragraph of a text (Wiki-40B markers or a blank line)."""

from __future__ import annotations

import re

_WIKI40B_BLOCK = re.compile(r"_START_(?:ARTICLE|SECTION|PARAGRAPH)_")


def first_paragraph(text: str) -> str:
    """The first paragraph: Wiki-40B's first ``_START_PARAGRAPH_`` block up to ``_NEWLINE_``, else the
    text up to its first blank line."""
    if "_START_PARAGRAPH_" in text:
        after = text.split("_START_PARAGRAPH_", 1)[1]
        block = _WIKI40B_BLOCK.split(after, 1)[0]
        return block.split("_NEWLINE_", 1)[0].strip()
    return re.split(r"\n\s*\n", text.strip(), maxsplit=1)[0].strip() if text.strip() else ""
