"""The string pool: report strings by integer id, loaded on demand, plus derived strings.

Rules work on integer ids; text is resolved only when a result is written. Strings that
the report does not hold (inline text, derived kernel names, labels) are interned here
with ids above ``DERIVED_BASE``, one id per distinct value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np

DERIVED_BASE = 1 << 40
MISSING = -1

Fetch = Callable[[list[int]], Iterable[tuple[int, str]]]


DENSE_SPAN = 1 << 25  # value ranges up to this size are counted in a table, not sorted


def distinct(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values of an int array (sorted) and each row's index into them.

    Values in a dense range (report string ids, and derived ids, which start at
    ``DERIVED_BASE``) are counted in a table, in time linear in the rows; others are sorted."""
    ids = np.asarray(ids, dtype=np.int64)
    if len(ids) == 0:
        return ids[:0], np.empty(0, np.int64)
    low, high = int(ids.min()), int(ids.max())
    span = min(DENSE_SPAN, 4 * len(ids) + 4096)  # a table much larger than the rows costs more than a sort
    if 0 <= low and high < span:  # string ids: a table from 0 (no shifted copy of the rows)
        return dense_distinct(ids, high)
    if high - low < span:
        uniq, index = dense_distinct(ids - low, high - low)
        return uniq + low, index
    if low >= 0 and high >= DERIVED_BASE:  # report ids and derived ids: fold the gap between them
        derived = ids >= DERIVED_BASE
        first_derived = int(ids[derived].min())
        below = int(ids[~derived].max()) + 1 if not derived.all() else 0
        if below + high - first_derived < span:
            shift = first_derived - below
            uniq, index = dense_distinct(ids - derived * shift, below + high - first_derived)
            return uniq + (uniq >= below) * shift, index
    uniq, inverse = np.unique(ids, return_inverse=True)
    return uniq, inverse.reshape(-1)


def dense_distinct(values: np.ndarray, high: int) -> tuple[np.ndarray, np.ndarray]:
    """``distinct`` of values in ``[0, high]`` by a presence table."""
    present = np.zeros(high + 1, dtype=np.bool_)
    present[values] = True
    uniq = np.flatnonzero(present)
    slot = np.zeros(high + 1, dtype=np.int64)  # zeroed pages are mapped lazily: only those written cost
    slot[uniq] = np.arange(len(uniq))
    return uniq, slot[values]


@dataclass(frozen=True)
class Coded:
    """An integer column as a code per row into ``values`` (distinct, ascending): the result
    of :func:`distinct`, kept so that grouping by the column need not find it again."""

    values: np.ndarray
    codes: np.ndarray

    @classmethod
    def of(cls, ids: np.ndarray) -> "Coded":
        return cls(*distinct(ids))

    def rows(self) -> np.ndarray:
        """The value of every row."""
        return self.values[self.codes]

    def take(self, index: np.ndarray) -> "Coded":
        """The rows ``index`` selects (the values they use, coded again)."""
        used, codes = distinct(self.codes[index])
        return Coded(self.values[used], codes)


class StringPool:
    """Strings by id; ``fetch`` reads missing report ids (in batches) from the report."""

    def __init__(self, fetch: Fetch | None = None) -> None:
        self._fetch = fetch
        self._by_id: dict[int, str] = {}
        self._by_value: dict[str, int] = {}
        self._next = DERIVED_BASE

    def load(self, ids: Iterable[int]) -> None:
        """Make sure the given report ids are resolved."""
        missing = sorted({int(i) for i in ids if i >= 0 and int(i) not in self._by_id})
        if not missing or self._fetch is None:
            return
        for key, value in self._fetch(missing):
            self._by_id[key] = value
            self._by_value.setdefault(value, key)

    def intern(self, values: Iterable[str]) -> np.ndarray:
        """Ids of the given strings, creating derived ids for new values."""
        out = []
        for value in values:
            key = self._by_value.get(value)
            if key is None:
                key = self._next
                self._next += 1
                self._by_value[value] = key
                self._by_id[key] = value
            out.append(key)
        return np.asarray(out, dtype=np.int64)

    def text(self, key: int) -> str:
        self.load([key])
        return self._resolved(int(key)) if key >= 0 else "-"

    def _resolved(self, key: int) -> str:
        """The string of a loaded id; an id the report does not define stays recognisable."""
        value = self._by_id.get(key)
        return value if value is not None else f"<unknown string {key}>"

    def map_coded(self, ids: np.ndarray, fn: Callable[[str], str]) -> Coded:
        """The ids of ``fn(text)`` of every row, ``fn`` computed once per distinct id; a missing
        id (negative) stays missing."""
        uniq, inverse = distinct(ids)
        texts = uniq[uniq >= 0]
        self.load(texts.tolist())
        mapped = self.intern(fn(self._resolved(int(u))) for u in texts)
        if len(texts) < len(uniq):
            mapped = np.concatenate([np.full(len(uniq) - len(texts), MISSING), mapped])
        values, code_of_uniq = distinct(mapped)  # distinct texts may map to one string
        return Coded(values, code_of_uniq[inverse])

    def map_distinct(self, ids: np.ndarray, fn: Callable[[str], str]) -> np.ndarray:
        """Per-row ids of ``fn(text)`` (:meth:`map_coded`)."""
        return self.map_coded(ids, fn).rows()

    def canonical(self, ids: np.ndarray) -> np.ndarray:
        """Per-row ids where equal strings share one id (the report may repeat a value)."""
        return self.map_distinct(ids, str)

    def lookup(self, ids: np.ndarray) -> np.ndarray:
        """Object array of the strings (``None`` for a missing id)."""
        ids = np.asarray(ids, dtype=np.int64)
        out = np.full(len(ids), None, dtype=object)
        valid = ids >= 0
        if not valid.any():
            return out
        uniq, inverse = distinct(ids[valid])
        self.load(uniq.tolist())
        values = np.array([self._resolved(int(u)) for u in uniq], dtype=object)
        out[valid] = values[inverse]
        return out

    def sort_rank(self, ids: np.ndarray) -> np.ndarray:
        """Integer ranks that order rows by their string (missing first)."""
        uniq, inverse = distinct(ids)
        texts = self.lookup(uniq)
        order = sorted(range(len(uniq)), key=lambda i: (texts[i] is not None, texts[i] or ""))
        rank = np.empty(len(uniq), dtype=np.int64)
        rank[order] = np.arange(len(uniq))
        return rank[inverse]
