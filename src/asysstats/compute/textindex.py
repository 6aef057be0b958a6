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

from asysstats.compute.arrow import from_numpy, text_offsets, to_numpy, valid_mask

MIX = np.uint64(0x9E3779B97F4A7C15)
ALL_BITS = np.uint64(0xFFFFFFFFFFFFFFFF)
HASHED_BYTES = 256  # strings that differ only past these bytes (and before the last eight) share a fingerprint
PAIRS_PER_STRING = 4  # more candidate pairs than this per string: compare by Arrow's hash set instead
BATCH = 2048  # strings hashed together: their words gathered as one block that stays in the CPU's cache
KEY_FORMAT = b"textindex-2"  # change it with the fingerprints: stored ones of another format are not used


def fingerprints(array: pa.Array) -> np.ndarray:
    """A uint64 per string of a string array without nulls: its length, its last eight bytes
    when it is longer than ``HASHED_BYTES``, then its first ``HASHED_BYTES`` eight at a time.
    Longest strings first, ``BATCH`` at a time: a batch's words are gathered as one block (each
    string's side by side), and the strings still that long are a prefix of it at each word."""
    offsets = text_offsets(array)
    length = np.diff(offsets).astype(np.int64)
    by_length = np.argsort(-length, kind="stable")
    length, start = length[by_length], offsets[:-1][by_length].astype(np.int64)
    data = np.frombuffer(array.buffers()[2] or b"", np.uint8)
    if len(data) < 8:
        data = np.concatenate([data, np.zeros(8, np.uint8)])
    words = np.ndarray((len(data) - 7,), "<u8", data, 0, (1,))  # the eight bytes from every offset
    key = length.astype(np.uint64) * MIX
    longer = int(np.searchsorted(-length, -HASHED_BYTES, "left"))
    _mix(key[:longer], words[start[:longer] + length[:longer] - 8])
    hashed = np.minimum(length, HASHED_BYTES)
    count = (hashed + 7) // 8  # words hashed per string, longest first
    for first in range(0, int(np.searchsorted(-count, 0, "left")), BATCH):  # strings of some bytes
        rows = slice(first, first + BATCH)
        at = start[rows, None] + np.arange(0, 8 * int(count[first]), 8)
        clipped = np.minimum(at, len(words) - 1)
        block = words[clipped]
        if at[:, -1].max() > clipped[:, -1].max():  # the data's last bytes: from its last eight, shifted
            block >>= np.uint64(8) * (at - clipped).astype(np.uint64)
        left = hashed[rows, None] - (at - start[rows, None])  # bytes of the string from each word on
        block &= ALL_BITS >> (np.uint64(8) * (8 - left.clip(0, 8)).astype(np.uint64))  # by 64: no bit
        ends = np.searchsorted(-count[rows], -np.arange(1, block.shape[1] + 1), "right")
        for word, end in enumerate(ends):
            _mix(key[first:first + end], block[:end, word])
    out = np.empty(len(key), np.uint64)
    out[by_length] = key
    return out


def _mix(key: np.ndarray, word: np.ndarray) -> None:
    """Hash ``word`` into ``key`` in place."""
    key ^= word
    key *= MIX
    key ^= key >> np.uint64(31)


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
