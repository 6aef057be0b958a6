"""User regular expressions: compiled once, matched with a time limit (``regex`` module).

Fixed patterns of the code use the standard ``re``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from asysstats.core.errors import AsysError

if TYPE_CHECKING:
    import regex

MATCH_TIMEOUT_S = 2.0


def compile_user_regex(pattern: str, where: str) -> regex.Pattern:
    """Compile ``pattern`` or raise a one-line error naming ``where`` it came from."""
    import regex  # imported by the runs that match user patterns only (it takes 20 ms)

    try:
        return regex.compile(pattern, regex.V0)
    except (regex.error, ValueError, OverflowError, RecursionError) as exc:
        raise AsysError(f"{where}: invalid regular expression {pattern!r}: {exc}") from exc


def search(pattern: regex.Pattern, text: str, where: str) -> bool:
    """``pattern.search(text)`` that gives up with an error instead of hanging."""
    try:
        return pattern.search(text, timeout=MATCH_TIMEOUT_S) is not None
    except TimeoutError as exc:
        raise AsysError(f"{where}: regular expression {pattern.pattern!r} took too long to match") from exc
