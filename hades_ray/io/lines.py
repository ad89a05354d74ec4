"""Reading text files line by line with a bound on line length, so one bad line never costs the whole file.

Readers get raw bytes per line and decide themselves what a bad line means (an error naming file and
line, or a quarantine entry): an over-long line is reported once and skipped to its end, never held in
memory whole; invalid UTF-8 is reported with the byte where it starts.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

MAX_LINE_BYTES = 1 << 20  # 1 MiB: far above any HaDes instance or judgment row
_SKIP_CHUNK = 1 << 16


class LineError(ValueError):
    """A line that cannot be read as text; ``reason`` is a short stable code for quarantine files."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def iter_raw_lines(handle: BinaryIO, max_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[int, bytes | None]]:
    """``(line number, bytes)`` per line, newline included; ``bytes`` is ``None`` for a line over ``max_bytes``."""
    number = 0
    while True:
        chunk = handle.readline(max_bytes + 1)
        if not chunk:
            return
        number += 1
        if len(chunk) > max_bytes and not chunk.endswith(b"\n"):
            while (rest := handle.readline(_SKIP_CHUNK)) and not rest.endswith(b"\n"):
                pass  # the rest of the over-long line, skipped unread
            chunk = None
        yield number, chunk


def decode_line(raw: bytes | None, number: int, max_bytes: int = MAX_LINE_BYTES) -> str:
    """The line as text (a UTF-8 byte-order mark on line 1 is dropped), or ``LineError``."""
    if raw is None:
        raise LineError("line_too_long", f"line longer than {max_bytes} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise LineError("invalid_utf8", f"not valid UTF-8 (byte {error.start + 1} of the line)") from None
    return text.removeprefix("\ufeff") if number == 1 else text
