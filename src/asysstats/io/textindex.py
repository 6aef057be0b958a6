"""Exact search of strings in an Arrow string array, by sorted 64-bit fingerprints.

A fingerprint hashes a string's byte length, its first ``HASHED_BYTES`` bytes and its last
eight: equal strings have equal fingerprints, so a search compares only the strings whose
fingerprints match (usually one) and makes no Python string per value. Building an index
sorts the fingerprints once; a search costs a binary search per query string. Fingerprints
are a pure function of the text: the column cache stores those of its dictionaries, tagged
with ``KEY_FORMAT``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from asysstats.io.arrow import from_numpy, to_numpy, valid_mask

MIX = np.uint64(0x9E3779B97F4A7C15)
ALL_BITS = np.uint64(0xFFFFFFFFFFFFFFFF)
HASHED_BYTES = 256  # strings that differ only past these bytes (and before the last eight) share a fingerprint
PAIRS_PER_STRING = 4  # more candidate pairs than this per string: compare by Arrow's hash set instead
KEY_FORMAT = b"textindex-1"  # change it with the fingerprints: stored ones of another format are not used


def text_offsets(array: pa.Array) -> np.ndarray:
    """Where each string of a string array starts in its data buffer, and where the last ends."""
    width = np.int64 if pa.types.is_large_string(array.type) else np.int32
    return np.frombuffer(array.buffers()[1], width, len(array) + 1, array.offset * np.dtype(width).itemsize)


def fingerprints(array: pa.Array) -> np.ndarray:
    """A uint64 per string of a string array without nulls, hashed eight bytes at a time
    (longest strings first, so that the strings still that long are a prefix in each round)."""
    offsets = text_offsets(array)
    length = np.diff(offsets).astype(np.int64)
    by_length = np.argsort(-length, kind="stable")
    length, start = length[by_length], offsets[:-1][by_length].astype(np.int64)
    data = np.frombuffer(array.buffers()[2] or b"", np.uint8)
    if len(data) < 8:
        data = np.concatenate([data, np.zeros(8, np.uint8)])
    words = np.ndarray((len(data) - 7,), "<u8", data, 0, (1,))  # the eight bytes from every offset
    key = length.astype(np.uint64) * MIX

    def mix(rows: slice, at: np.ndarray, keep: np.ndarray | None = None) -> None:
        """Hash into ``key[rows]`` the eight bytes from ``at`` (only the first ``keep``)."""
        if keep is None:
            word = words[at]
        else:  # a short piece, maybe near the end of the data: shift the bytes before it out
            clipped = np.minimum(at, len(words) - 1)
            word = words[clipped] >> (np.uint64(8) * (at - clipped).astype(np.uint64))
            word &= ALL_BITS >> (np.uint64(64) - np.uint64(8) * keep.astype(np.uint64))  # by 64: no bit
        hashed = key[rows]
        hashed ^= word
        hashed *= MIX
        hashed ^= hashed >> np.uint64(31)

    def longer(than: int) -> int:
        return int(np.searchsorted(-length, -than, "left"))  # strings of more than ``than`` bytes

    eight = longer(7)
    mix(slice(0, eight), start[:eight] + length[:eight] - 8)  # the last eight bytes
    for first in range(0, min(int(length.max(initial=0)), HASHED_BYTES), 8):
        full, some = longer(first + 7), longer(first)
        mix(slice(0, full), start[:full] + first)
        if some > full:
            mix(slice(full, some), start[full:some] + first, length[full:some] - first)
    out = np.empty(len(key), np.uint64)
    out[by_length] = key
    return out


class TextIndex:
    """Positions of strings in ``values`` (a string array without nulls; it may repeat a value);
    ``keys``: their fingerprints, when known."""

    def __init__(self, values: pa.Array, keys: np.ndarray | None = None) -> None:
        self.values = values
        keys = fingerprints(values) if keys is None else keys
        self._order = np.argsort(keys)
        self._keys = keys[self._order]

    def keys(self) -> np.ndarray:
        """The fingerprint of every value."""
        keys = np.empty(len(self._keys), np.uint64)
        keys[self._order] = self._keys
        return keys

    def find(self, query: pa.Array, keys: np.ndarray | None = None) -> np.ndarray:
        """Per string of ``query`` (no nulls; ``keys`` its fingerprints), the first position
        of an equal string in ``values``, -1 when there is none."""
        keys = fingerprints(query) if keys is None else keys
        low = np.searchsorted(self._keys, keys, "left")
        counts = np.searchsorted(self._keys, keys, "right") - low
        total = int(counts.sum())
        if total > PAIRS_PER_STRING * (len(query) + len(self.values)):
            found = pc.index_in(query, value_set=self.values)
            return np.where(valid_mask(found), to_numpy(found, np.dtype(np.int32)), -1).astype(np.int64)
        which = np.repeat(np.arange(len(query)), counts)
        slot = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(low, counts)
        candidate = self._order[slot]
        equal = pc.equal(query.take(from_numpy(which)), self.values.take(from_numpy(candidate)))
        hit = to_numpy(pc.cast(equal, pa.uint8()), np.dtype(np.uint8)).astype(bool)
        out = np.full(len(query), len(self.values), np.int64)
        np.minimum.at(out, which[hit], candidate[hit])
        return np.where(out < len(self.values), out, -1)

    def first_equal(self) -> np.ndarray:
        """Per value, the first position of an equal value (its own when it is distinct)."""
        out = np.arange(len(self.values))
        same = self._keys[1:] == self._keys[:-1]
        if same.any():
            shared = np.zeros(len(self._keys), bool)
            shared[1:] |= same
            shared[:-1] |= same
            members = np.sort(self._order[shared])
            out[members] = self.find(self.values.take(from_numpy(members)))
        return out
