"""Integers given by the user (option values, ``--filter-hgtx`` indices, ``ts_shift``): parsed and
range-checked in one place, so that a value that does not fit the int64 columns it meets (or
the narrower range its meaning allows) is a one-line error naming it, never a wrapped number or
an overflow deep inside a rule."""

from __future__ import annotations

import re
from fractions import Fraction

from asysstats.core.errors import AsysError, quoted

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
INTEGER = re.compile(r"\s*([+-]?)0*([0-9]+)\s*", re.ASCII)  # decimal ASCII digits, spaces around
DECIMAL = re.compile(r"\s*\+?([0-9]*)(?:\.([0-9]{0,9}))?\s*", re.ASCII)  # 0.5, .25, 3., 500: no sign, no exponent


def parse_int(text: str, what: str, minimum: int = INT64_MIN, maximum: int = INT64_MAX) -> int:
    """The integer ``text`` spells (ASCII digits, a sign, spaces around), from ``minimum`` to
    ``maximum``; else a one-line error naming ``what``. A value of more digits than any int64 is
    refused before it is converted (no 5,000-digit conversion, no ``int`` digit limit)."""
    found = INTEGER.fullmatch(text)
    if found is None or len(found[2]) > len(str(INT64_MAX)):
        raise AsysError(f"{what} must be {bounds(minimum, maximum, full=found is not None)}, got {quoted(text)}")
    return checked_int(int(found[1] + found[2]), what, minimum, maximum, text)


def parse_decimal(text: str, what: str, minimum: int = 0, maximum: int = INT64_MAX) -> Fraction:
    """The non-negative decimal number ``text`` spells exactly (ASCII digits with up to 9 after a
    point, spaces around), from ``minimum`` to ``maximum``; else a one-line error naming ``what``."""
    found = DECIMAL.fullmatch(text)
    if found is None or not (found[1] or found[2]) or len(found[1].lstrip("0")) > len(str(INT64_MAX)):
        raise AsysError(f"{what} must be a decimal number from {minimum} to {maximum} (e.g. 0.5), got {quoted(text)}")
    value = Fraction(int(found[1] or "0")) + Fraction(int(found[2] or "0"), 10 ** len(found[2] or ""))
    if not minimum <= value <= maximum:
        raise AsysError(f"{what} must be a decimal number from {minimum} to {maximum}, got {quoted(text)}")
    return value


def checked_int(value: int, what: str, minimum: int = INT64_MIN, maximum: int = INT64_MAX,
                given: object = None) -> int:
    """``value`` when it lies from ``minimum`` to ``maximum``; else a one-line error naming
    ``what`` and quoting ``given`` (the text it was read from; the value itself by default)."""
    if not minimum <= value <= maximum:
        raise AsysError(f"{what} must be {bounds(minimum, maximum, full=not INT64_MIN <= value <= maximum)}, "
                        f"got {quoted(value if given is None else given)}")
    return value


def bounds(minimum: int, maximum: int, full: bool = False) -> str:
    """``an integer >= 1``; with ``full`` (a value past the top, or past int64) or a range
    narrower than int64 at the top, the whole range: ``an integer from 0 to 2147483647``."""
    if full or maximum != INT64_MAX:
        return f"an integer from {minimum} to {maximum}"
    return "an integer" if minimum == INT64_MIN else f"an integer >= {minimum}"
