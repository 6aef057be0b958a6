"""One exception family; the CLI prints its message on one line and exits 2. Messages quote user
values with :func:`quoted` (cut to a readable length) and reach the console through
:func:`escaped_control` (one line, no terminal control sequence, docs/decisions.md D17)."""

from __future__ import annotations

import re

QUOTED_CHARS = 80  # the characters of a user value a message shows; a longer one is cut, with its length
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")  # C0, DEL, C1 and the Unicode line separators
NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


class AsysError(Exception):
    """Bad input or unusable data: the message names the culprit (file, table, rule, option)."""


class MissingData(AsysError):
    """None of the tables a rule reads exist in the report. ``lacking``: what it lacks, in the
    words of the report's profiler (``CUDA kernel data``), for nsys's ``SKIPPED:`` line."""

    def __init__(self, message: str, lacking: str = "") -> None:
        super().__init__(message)
        self.lacking = lacking or message


class OutputClosed(Exception):
    """The console's reader went away (``asys stats ... | head``): stop quietly, exit 0."""


def quoted(value: object) -> str:
    """``value`` as a message quotes it: its ``repr`` (control characters escaped); a value of
    more than ``QUOTED_CHARS`` characters shows its first ones and its length, so that a 100 KB
    option value does not make a 100 KB error line."""
    text = str(value)
    if len(text) <= QUOTED_CHARS:
        return repr(text)
    return f"{text[:QUOTED_CHARS]!r}…({len(text):,} characters)"


def escaped_control(text: str) -> str:
    """``text`` with each control character shown as an escape (``\\n``, ``\\x1b``, ``\\u2028``):
    what a terminal would act on (colours, cursor moves, a new line) is printed, not obeyed."""
    return CONTROL.sub(lambda found: NAMED_ESCAPES.get(found[0]) or repr(found[0])[1:-1], text)
