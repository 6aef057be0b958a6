"""Bounds on JSON text from a file, checked on its bytes, chunk by chunk, before a parser sees them:
nesting depth, the length of one string, the length of one number (docs/reliability.md).

Why before: ijson's C backend keeps the path prefix of every open level (memory quadratic in the
depth: a 200 KB trace nested 100,000 deep took 24 GB), re-scans a string that spans its read
chunks (time quadratic in the string's length: 27 s for a 64 MB one) and crashes on a number of
more than 4,300 digits (Python's int conversion limit); Python's json module raises RecursionError
from about 1,000 levels. The check is numpy over the quotes and brackets (and, where a long one may be,
the runs of digits): linear, a few percent of the parse. A chunk that passes brings the
parser no deeper, no longer string or number than the bounds, valid JSON or not: the counts are
exact up to the first byte a parser would refuse.
"""

from __future__ import annotations

import numpy as np

from asysstats.core.errors import AsysError

MAX_DEPTH = 100  # nested arrays and objects (a PyTorch profiler trace nests 5 to 7)
MAX_STRING = 256 << 10  # bytes of one string (the longest in the Kineto corpus: 2,165)
MAX_DIGITS = 1024  # digits in a row outside strings: one number (Python's int takes up to 4,300)
QUOTE, OPEN, CLOSE, BACKSLASH = ord('"'), ord("{"), ord("}"), ord("\\")  # "[" | 32 is "{", "]" | 32 is "}"
BLOCK = MAX_DIGITS // 2  # a longer run of digits holds a whole aligned block of this many
PIECE = 1 << 16  # bytes checked at once by check_json (numpy's work arrays stay small)


def check_json(data: bytes, label: str) -> None:
    """The bounds on a whole JSON text in memory: an AsysError naming ``label`` when one is passed."""
    bounds = JsonBounds(label)
    for start in range(0, len(data), PIECE):
        bounds.feed(data[start:start + PIECE])


class JsonBounds:
    """Feed the bytes of one JSON text in order (:meth:`feed`); an AsysError naming ``label`` and
    the byte offset as soon as they pass a bound."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.offset = 0  # bytes fed so far
        self.depth = 0
        self.in_string = False
        self.open_quote = -1  # offset of the opening quote of the string being read
        self.escape_next = False  # the bytes so far end in an odd run of backslashes
        self.digit_run = 0  # the bytes so far end in this many digits

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        data = np.frombuffer(chunk, np.uint8)
        quotes = np.flatnonzero(data == QUOTE)
        if self.escape_next or BACKSLASH in chunk:
            quotes = quotes[~self._escaped(data)[quotes]]
        folded = data | 32
        brackets = np.flatnonzero((folded == OPEN) | (folded == CLOSE))
        self._check_strings(quotes, len(data))
        self._check_digits(data, quotes)
        self._check_depth(brackets, folded[brackets] == OPEN, self._within_string(quotes, brackets))
        self.in_string = bool((len(quotes) + self.in_string) & 1)
        self.offset += len(data)

    def _within_string(self, quotes: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Whether each position of this chunk lies within a string: after an odd number of quotes."""
        return (np.searchsorted(quotes, positions) + self.in_string) & 1 == 1

    def _escaped(self, data: np.ndarray) -> np.ndarray:
        """Whether each byte follows an odd run of backslashes (the run may begin in an earlier chunk)."""
        index = np.arange(len(data))
        last_other = np.maximum.accumulate(np.where(data == BACKSLASH, -1, index))  # last non-backslash up to i
        run = np.empty(len(data), np.int64)  # backslashes just before i
        run[0] = self.escape_next
        run[1:] = index[:-1] - last_other[:-1] + np.where(last_other[:-1] < 0, self.escape_next, 0)
        end_run = len(data) - 1 - last_other[-1] + (self.escape_next if last_other[-1] < 0 else 0)
        self.escape_next = bool(end_run & 1)
        return run & 1 == 1

    def _check_strings(self, quotes: np.ndarray, size: int) -> None:
        """Each string closed in this chunk, and the one still open at its end, within MAX_STRING."""
        marks = np.concatenate(([self.open_quote - self.offset], quotes)) if self.in_string else quotes
        opens, closes = marks[0::2], marks[1::2]
        lengths = closes - opens[:len(closes)] - 1
        if len(opens) > len(closes):
            lengths = np.append(lengths, size - opens[-1] - 1)
            self.open_quote = self.offset + int(opens[-1])
        too_long = lengths > MAX_STRING
        if too_long.any():
            start = self.offset + int(opens[np.argmax(too_long)])
            raise AsysError(f"{self.label}: a JSON string longer than {MAX_STRING >> 10} KiB at byte {start:,}")

    def _check_digits(self, data: np.ndarray, quotes: np.ndarray) -> None:
        """No run of more than MAX_DIGITS digits outside strings (one number). Runs are measured
        only when one may be that long: it continues the last chunk's, or holds an aligned block."""
        digits = (data - 48) < 10  # bytes wrap: only "0".."9" are below 10
        lead = len(data) if digits.all() else int(np.argmin(digits))
        whole = len(data) // BLOCK * BLOCK
        if self.digit_run + lead > MAX_DIGITS or digits[:whole].reshape(-1, BLOCK).all(axis=1).any():
            edges = np.concatenate(([-1], np.flatnonzero(~digits), [len(data)]))
            starts, runs = edges[:-1] + 1, np.diff(edges) - 1
            runs[0] += self.digit_run
            long_runs = np.flatnonzero((runs > MAX_DIGITS) & ~self._within_string(quotes, starts))
            if len(long_runs):
                start = self.offset + int(starts[long_runs[0]]) - (self.digit_run if long_runs[0] == 0 else 0)
                raise AsysError(f"{self.label}: a JSON number of more than {MAX_DIGITS:,} digits at byte {start:,}")
        if lead == len(data):
            self.digit_run += lead
        else:
            self.digit_run = 0 if not digits[-1] else len(data) - 1 - int(np.flatnonzero(~digits)[-1])

    def _check_depth(self, brackets: np.ndarray, opening: np.ndarray, in_string: np.ndarray) -> None:
        if not len(brackets):
            return
        depths = self.depth + np.cumsum(np.where(in_string, 0, np.where(opening, 1, -1)))
        too_deep = depths > MAX_DEPTH
        if too_deep.any():
            raise AsysError(f"{self.label}: JSON nested deeper than {MAX_DEPTH} levels at byte "
                            f"{self.offset + int(brackets[np.argmax(too_deep)]):,}")
        self.depth = int(depths[-1])
