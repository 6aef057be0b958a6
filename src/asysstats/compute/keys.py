"""Join keys of integer columns: two ids packed into one, and the row holding each wanted key."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from asysstats.compute.distinct import distinct

DENSE_SLACK = 4  # a direct table of at most this many slots per key (plus DENSE_FLOOR) beats a sort
DENSE_FLOOR = 1 << 16


def pair_key(high: np.ndarray, low: np.ndarray) -> np.ndarray:
    """One int64 join key of two ids (``high`` < 2**31; ``low`` keeps its low 32 bits)."""
    return (np.asarray(high, np.int64) << 32) | (np.asarray(low, np.int64) & 0xFFFFFFFF)


def row_order(keys: Sequence[np.ndarray]) -> np.ndarray:
    """The order of ``np.lexsort`` by integer ``keys`` given most significant first: each key
    replaced by its dense rank (:func:`distinct`), the ranks packed into one int64 when they fit
    62 bits and ordered by one stable ``argsort``; else ``np.lexsort``. On 4 M groups of seven
    keys (``hgtx_kern_sum``) 4.4 -> 1.9 s, text ranks included (docs/performance.md)."""
    packed = np.zeros(len(keys[0]) if keys else 0, np.int64)
    used = 0
    for values in keys:
        uniq, codes = distinct(values)
        width = max(len(uniq) - 1, 1).bit_length()
        used += width
        if used > 62:
            return np.lexsort(tuple(reversed(keys)))
        packed <<= width
        packed |= codes
        del codes
    return np.argsort(packed, kind="stable")


def lookup(keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Row of ``keys`` holding each ``wanted`` value (its first occurrence), -1 when absent."""
    if len(keys) == 0:
        return np.full(len(wanted), -1, np.int64)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    slot = np.minimum(np.searchsorted(sorted_keys, wanted), len(keys) - 1)
    return np.where(sorted_keys[slot] == wanted, order[slot], -1)


def lookup_pair(high: np.ndarray, low: np.ndarray, wanted_high: np.ndarray, wanted_low: np.ndarray) -> np.ndarray:
    """:func:`lookup` of the pairs ``(wanted_high, wanted_low)`` among the rows' ``(high, low)``
    (a process and a correlation id). With few distinct ``high`` values and dense non-negative
    ``low`` ones the pairs index a table directly: 3.5 times faster than the sort and binary
    search on 5.5 M launch calls (docs/performance.md)."""
    if len(high) == 0:
        return np.full(len(wanted_high), -1, np.int64)
    highs, codes = distinct(high)
    span = int(low.max()) + 1
    if int(low.min()) < 0 or len(highs) * span > DENSE_SLACK * len(high) + DENSE_FLOOR:
        return lookup(pair_key(high, low), pair_key(wanted_high, wanted_low))
    rows = np.int32 if len(high) < np.iinfo(np.int32).max else np.int64  # half the fresh memory
    table = np.full(len(highs) * span, len(high), rows)
    pair = codes.astype(np.int64)  # each row's place in the table
    pair *= span
    pair += low
    np.minimum.at(table, pair, np.arange(len(high), dtype=rows))  # the first row of a pair
    del pair
    slot = np.searchsorted(highs, wanted_high)
    np.minimum(slot, len(highs) - 1, out=slot)
    inside = (highs[slot] == wanted_high) & (wanted_low >= 0) & (wanted_low < span)
    slot *= span
    slot += np.where(inside, wanted_low, 0)
    row = table[slot]
    del slot
    return np.where(inside & (row < len(high)), row, np.int64(-1))
