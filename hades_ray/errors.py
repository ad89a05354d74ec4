"""The one base class of every input error: the CLI prints its message on one line and exits with 2.

A ``UserError`` message names what was wrong (file, line, field or key) and what to do; no traceback
follows it, since the fault is in the input and not in the program.
"""

from __future__ import annotations


class UserError(ValueError):
    """Bad input (a file, a line, a config key, a model reference), described fully by the message."""


class ConfigError(UserError):
    """A configuration key or value that cannot be used; raised before any work starts."""
