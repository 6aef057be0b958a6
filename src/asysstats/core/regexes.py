"""User regular expressions: compiled once, matched within a time budget (``regex`` module).

Fixed patterns of the code use the standard ``re``.

The budget belongs to the pattern and is shared by all its matches (docs/decisions.md D29): a
pattern holds up to ``MATCH_TIMEOUT_S`` of matching time, each match spends what it takes and
gives back ``MATCH_REFILL_S``. A pattern that backtracks without end therefore
stops the run with one error after about ``MATCH_TIMEOUT_S`` however many names it meets,
while a sound pattern over millions of distinct names (a few µs each) never runs out."""

from __future__ import annotations

import re
import time
import weakref
from typing import TYPE_CHECKING, Iterable

import numpy as np

from asysstats.core.errors import AsysError, quoted

if TYPE_CHECKING:
    import regex

MATCH_TIMEOUT_S = 2.0  # the matching time a pattern may spend at once (its budget, full)
MATCH_REFILL_S = 0.001  # given back to the budget by each match: a sound pattern's match takes µs
SPECIAL = frozenset(".^$*+?{}[]\\|()")  # the characters that end a pattern's plain beginning


class Budget:
    """The matching time a pattern has left (s). Threads matching one pattern share it without a
    lock: a lost update misplaces microseconds, not the bound."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MATCH_TIMEOUT_S


_budgets: weakref.WeakKeyDictionary[regex.Pattern, Budget] = weakref.WeakKeyDictionary()


def compile_user_regex(pattern: str, where: str) -> regex.Pattern:
    """Compile ``pattern`` (with a full budget) or raise a one-line error naming ``where`` it came from."""
    import regex  # imported by the runs that match user patterns only (it takes 20 ms)

    try:
        compiled = regex.compile(pattern, regex.V0)
    except (regex.error, ValueError, OverflowError, RecursionError) as exc:
        raise AsysError(f"{where}: invalid regular expression {quoted(pattern)}: {exc}") from exc
    _budgets[compiled] = Budget()  # a new request: a full budget (``regex`` hands out its cached patterns again)
    return compiled


def search(pattern: regex.Pattern, text: str, where: str) -> bool:
    """``pattern.search(text)`` within the pattern's budget: an error instead of a hang, and
    instead of a run as many times longer as there are slow names."""
    budget = _budgets.get(pattern) or _budgets.setdefault(pattern, Budget())
    if budget.left <= 0:
        raise too_slow(pattern, where)
    started = time.perf_counter()
    try:
        found = pattern.search(text, timeout=budget.left)
    except TimeoutError as exc:
        budget.left = 0.0
        raise too_slow(pattern, where) from exc
    budget.left = min(MATCH_TIMEOUT_S, budget.left - (time.perf_counter() - started) + MATCH_REFILL_S)
    return found is not None


def too_slow(pattern: regex.Pattern, where: str) -> AsysError:
    """The error of a pattern whose budget is spent."""
    return AsysError(f"{where}: regular expression {quoted(pattern.pattern)} took too long to match "
                     f"(its {MATCH_TIMEOUT_S:g} s budget for all names is spent; simplify it)")


def search_each(pattern: regex.Pattern, texts: Iterable[str | None], where: str) -> np.ndarray:
    """:func:`search` of each text (None finds nothing), as a mask. A text without the
    :func:`required_literal` of the pattern is not searched: 625 k distinct range names against
    ``ProfilerStep#\\d+`` 2.7 -> 0.1 s."""
    literal = "" if pattern.flags & (re.IGNORECASE | re.VERBOSE) else required_literal(pattern.pattern)
    return np.array([text is not None and literal in text and search(pattern, text, where) for text in texts],
                    dtype=bool)


def required_literal(pattern: str) -> str:
    """Text that every match of ``pattern`` contains: the plain characters it begins with, less
    the last when a quantifier that allows none of it follows; '' for a pattern with an
    alternation or inline flags anywhere (``|``, ``(?``), which this does not read."""
    if "|" in pattern or "(?" in pattern:
        return ""
    plain = next((at for at, char in enumerate(pattern) if char in SPECIAL), len(pattern))
    optional = plain < len(pattern) and pattern[plain] in "?*{"
    return pattern[:max(plain - 1, 0)] if optional else pattern[:plain]
