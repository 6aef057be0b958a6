"""The string pool: report strings by integer id, loaded on demand, plus derived strings.

Rules work on integer ids; text is resolved only when a result is written. Strings that
the report does not hold (inline text, derived kernel names, labels) are interned here
with ids above ``DERIVED_BASE``, one id per distinct value. Derived strings live in Arrow
string arrays and are found by :class:`~asysstats.compute.textindex.TextIndex`: bulk text is
interned and gathered without a Python string per value.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from asysstats.compute.arrow import from_numpy, from_texts, to_numpy, valid_mask
from asysstats.compute.distinct import DERIVED_BASE, Coded, distinct
from asysstats.compute.keys import lookup
from asysstats.compute.textindex import TextIndex, fingerprints

MISSING = -1

Fetch = Callable[[list[int]], Iterable[tuple[int, str]]]


SMALL_BLOCK = 1 << 16  # strings registered in pieces below this size are gathered into one block


@dataclass
class Block:
    """Distinct strings (no nulls) and their ids; ``keys``: their fingerprints, until the index
    (built from them on the first search) holds them."""

    values: pa.Array
    ids: np.ndarray
    keys: np.ndarray | None = None
    index: TextIndex | None = None

    def fingerprints(self) -> np.ndarray:
        return self.index.keys() if self.index is not None else self.keys  # type: ignore[return-value]

    def find(self, query: pa.Array, keys: np.ndarray) -> np.ndarray:
        """Position of each ``query`` string (``keys``: its fingerprints) in ``values``, -1 when absent."""
        if self.index is None:
            self.index, self.keys = TextIndex(self.values, self.keys), None
        return self.index.find(query, keys)


class StringPool:
    """Strings by id; ``fetch`` reads missing report ids (in batches) from the report.

    Every string the pool knows (a loaded report string, a derived one) sits in one
    :class:`Block` under the id it was first known by: that id is what interning it gives."""

    def __init__(self, fetch: Fetch | None = None) -> None:
        self._fetch = fetch
        self._report: dict[int, str] = {}
        self._blocks: list[Block] = []
        self._derived: list[pa.Array] = []  # derived strings in id order
        self._count = 0  # derived strings so far
        self._loading = threading.Lock()

    def load(self, ids: Iterable[int]) -> None:
        """Make sure the given report ids are resolved (one thread at a time: the pieces of a
        CSV are formatted side by side)."""
        with self._loading:
            missing = sorted({int(i) for i in ids if 0 <= i < DERIVED_BASE and int(i) not in self._report})
            if not missing or self._fetch is None:
                return
            fetched = list(self._fetch(missing))
            self._report.update(fetched)
            if fetched:
                self._register(from_texts([value for _, value in fetched]),
                               np.array([key for key, _ in fetched], np.int64))

    def intern(self, values: Iterable[str] | pa.Array) -> np.ndarray:
        """Ids of the given strings, creating derived ids for new values: a few labels, or an Arrow
        array of texts (no nulls) that are mostly distinct, registered without a dictionary made
        first (620 K joined range names: 1.67 -> 1.0 s, docs/performance.md); :meth:`intern_texts`
        for a column of repeated text."""
        if not isinstance(values, pa.Array):
            values = from_texts(list(values))
        return self._register(values) if len(values) else np.empty(0, np.int64)

    def intern_texts(self, column: pa.Array | pa.ChunkedArray, keys: list[np.ndarray] | None = None) -> np.ndarray:
        """A text column (plain or dictionary-encoded) interned: the string ids, -1 for null.
        The dictionaries of all the chunks are registered in one call (new ids in order of first
        occurrence): a call per chunk would search the blocks every earlier chunk added (the 22
        slices of 5.7 M HGTX texts: 0.75-1.0 s against 0.1-0.25 s). ``keys``: the fingerprints of
        each chunk's dictionary, when known (a dictionary-encoded column)."""
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        encoded = [array if pa.types.is_dictionary(array.type) else pc.dictionary_encode(array.cast(pa.string()))
                   for array in chunks]
        used = [array.null_count < len(array) for array in encoded]  # an all-null chunk registers nothing
        # an empty slice, not pa.array([]): an Arrow array of Python values imports pandas
        dictionaries = [array.dictionary.cast(pa.string())[slice(None) if use else slice(0)]
                        for array, use in zip(encoded, used)]
        first = np.cumsum([0] + [len(d) for d in dictionaries])  # each chunk's first string among them all
        ids = np.empty(0, np.int64)
        if first[-1]:
            ids = self._register(pa.concat_arrays(dictionaries), keys=None if keys is None else np.concatenate(
                [k if use else k[:0] for k, use in zip(keys, used)]))
        some_null = any(array.null_count for array in encoded)
        out = np.full(len(column), MISSING, dtype=np.int64) if some_null else np.empty(len(column), np.int64)
        at = 0
        for number, array in enumerate(encoded):
            if used[number]:  # each chunk's indices taken as they are, into its own ids, in place
                chunk_ids = ids[first[number]:first[number + 1]]
                indices = to_numpy(array.indices, np.dtype(f"int{array.indices.type.bit_width}"))
                target = out[at:at + len(array)]
                if array.null_count:
                    valid = valid_mask(array.indices)
                    target[valid] = chunk_ids[indices[valid]]
                else:
                    np.take(chunk_ids, indices, out=target, mode="clip")  # "raise" would take into a copy
            at += len(array)
        return out

    def _register(self, values: pa.Array, ids: np.ndarray | None = None, keys: np.ndarray | None = None) -> np.ndarray:
        """The id of every string of ``values`` (no nulls; ``keys``: their fingerprints, when
        known): the id it is known by, else ``ids`` (report strings) or a new derived id, in
        order of first occurrence."""
        values = values if values.type == pa.string() else values.cast(pa.string())
        index = TextIndex(values, keys)
        first = index.first_equal()
        own = np.flatnonzero(first == np.arange(len(values)))
        every = len(own) == len(values)  # all distinct
        query = values if every else values.take(from_numpy(own))
        keys = index.keys() if keys is None else keys
        keys = keys if every else keys[own]
        known = np.full(len(own), MISSING, np.int64)
        for block in self._blocks:
            found = block.find(query, keys)
            known = np.where(found >= 0, block.ids[np.maximum(found, 0)], known)
        new = np.flatnonzero(known < 0)
        if len(new):
            known[new] = DERIVED_BASE + self._count + np.arange(len(new)) if ids is None else ids[own[new]]
            if len(new) == len(values):  # all distinct and new: kept as they are, index included
                self._add(Block(values, known, index=index), derived=ids is None)
            else:
                self._add(Block(query.take(from_numpy(new)), known[new], keys[new]), derived=ids is None)
        if every:
            return known.copy()  # a block may keep ``known`` as its ids
        slot = np.empty(len(values), np.int64)
        slot[own] = np.arange(len(own))
        return known[slot[first]]

    def _add(self, block: Block, derived: bool) -> None:
        """Keep ``block`` (its strings the next derived ids when ``derived``); small blocks are
        joined to the small block before them, small derived pieces likewise (one array for
        both when the block before holds the last derived piece)."""
        last = self._blocks[-1] if self._blocks else None
        joined = None
        if last is not None and max(len(last.values), len(block.values)) < SMALL_BLOCK:
            joined = Block(pa.concat_arrays([last.values, block.values]), np.concatenate([last.ids, block.ids]),
                           np.concatenate([last.fingerprints(), block.fingerprints()]))
            self._blocks[-1] = joined
        else:
            self._blocks.append(block)
        if derived:
            self._count += len(block.values)
            if joined is not None and last is not None and self._derived and self._derived[-1] is last.values:
                self._derived[-1] = joined.values
            elif self._derived and max(len(self._derived[-1]), len(block.values)) < SMALL_BLOCK:
                self._derived[-1] = pa.concat_arrays([self._derived[-1], block.values])
            else:
                self._derived.append(block.values)

    def texts(self, ids: np.ndarray, missing: str | None = None) -> pa.Array:
        """The strings of ``ids`` as an Arrow string array; a missing id (negative) is null,
        or ``missing`` when given."""
        ids = np.asarray(ids, dtype=np.int64)
        if len(self._derived) == 1 and (ids >= DERIVED_BASE).all():
            return self._derived[0].take(from_numpy(ids - DERIVED_BASE))
        report = (ids >= 0) & (ids < DERIVED_BASE)
        uniq, inverse = distinct(ids[report])
        self.load(uniq.tolist())
        parts: list[pa.Array] = []
        slot = np.zeros(len(ids), np.int64)  # each row's position in the parts joined
        if (ids < 0).any():
            parts.append(from_texts([missing]))
        if len(uniq):
            slot[report] = len(parts) + inverse
            parts.append(from_texts([self._resolved(int(u)) for u in uniq]))
        taken = sum(map(len, parts))
        starts = DERIVED_BASE + np.cumsum([0] + [len(chunk) for chunk in self._derived])
        for chunk, start, stop in zip(self._derived, starts[:-1], starts[1:]):  # a chunked take copies every chunk
            rows = np.flatnonzero((ids >= start) & (ids < stop))
            if len(rows):
                index = ids[rows] - start
                whole = np.array_equal(index, np.arange(len(chunk)))
                parts.append(chunk if whole else chunk.take(from_numpy(index)))
                slot[rows] = taken + np.arange(len(rows))
                taken += len(rows)
        if not parts:
            return from_texts([])
        joined = parts[0] if len(parts) == 1 else pa.concat_arrays(parts)
        return joined if np.array_equal(slot, np.arange(len(ids))) else joined.take(from_numpy(slot))

    def dictionary(self, ids: np.ndarray) -> tuple[pa.DictionaryArray, np.ndarray]:
        """String ids as dictionary-encoded text (a missing id, -1, as null), and the fingerprints
        of its dictionary: the inverse of :meth:`intern_texts`, to store text rather than a
        run's ids."""
        valid = ids >= 0
        uniq, inverse = distinct(np.where(valid, ids, 0))
        indices = pa.Array.from_buffers(pa.int32(), len(ids), [pa.py_buffer(np.packbits(valid, bitorder="little")),
                                                              pa.py_buffer(inverse.astype(np.int32))])
        values = self.texts(uniq)
        return pa.DictionaryArray.from_arrays(indices, values), self._fingerprints(uniq, values)

    def _fingerprints(self, ids: np.ndarray, values: pa.Array) -> np.ndarray:
        """The fingerprints of ``values``, the strings of the distinct ``ids``: those the blocks
        keep, computed for the strings of ids no block holds."""
        keys = np.zeros(len(ids), np.uint64)
        kept = np.zeros(len(ids), bool)
        for block in self._blocks:
            at = lookup(block.ids, ids)
            hit = at >= 0
            keys[hit] = block.fingerprints()[at[hit]]
            kept |= hit
        rest = np.flatnonzero(~kept)
        if len(rest):
            keys[rest] = fingerprints(values.take(from_numpy(rest)))
        return keys

    def text(self, key: int) -> str:
        return self.lookup(np.array([key]))[0] if key >= 0 else "-"

    def _resolved(self, key: int) -> str:
        """The string of a loaded report id; an id the report does not define stays recognisable."""
        value = self._report.get(key)
        return value if value is not None else f"<unknown string {key}>"

    def map_coded(self, ids: np.ndarray, fn: Callable[[str], str]) -> Coded:
        """The ids of ``fn(text)`` of every row, ``fn`` computed once per distinct id; a missing
        id (negative) stays missing."""
        uniq, inverse = distinct(ids)
        texts = uniq[uniq >= 0]
        mapped = self.intern(fn(t) for t in self.lookup(texts))
        if len(texts) < len(uniq):
            mapped = np.concatenate([np.full(len(uniq) - len(texts), MISSING), mapped])
        if np.all(mapped[1:] > mapped[:-1]):  # distinct and in order already: the codes stand
            return Coded(mapped, inverse)
        values, code_of_uniq = distinct(mapped)  # distinct texts may map to one string
        return Coded(values, code_of_uniq[inverse])

    def map_distinct(self, ids: np.ndarray, fn: Callable[[str], str]) -> np.ndarray:
        """Per-row ids of ``fn(text)`` (:meth:`map_coded`)."""
        return self.map_coded(ids, fn).rows()

    def canonical(self, ids: np.ndarray) -> np.ndarray:
        """Per-row ids where equal strings share one id (:meth:`canonical_coded`)."""
        return self.canonical_coded(ids).rows()

    def canonical_coded(self, ids: np.ndarray) -> Coded:
        """Ids where equal strings share one id (the report may repeat a value; a derived id
        is always its string's), coded: a code per row, as narrow as the count of ids allows."""
        uniq, codes = distinct(ids, narrow=True)
        canonical = uniq.copy()
        report = np.flatnonzero((uniq >= 0) & (uniq < DERIVED_BASE))
        if len(report):
            canonical[report] = self.intern(self.lookup(uniq[report]))
        return Coded(uniq, codes).mapped(canonical)

    def lookup(self, ids: np.ndarray) -> np.ndarray:
        """Object array of the strings (``None`` for a missing id), for work per string."""
        ids = np.asarray(ids, dtype=np.int64)
        out = np.full(len(ids), None, dtype=object)
        valid = ids >= 0
        if not valid.any():
            return out
        uniq, inverse = distinct(ids[valid])
        out[valid] = np.array(self.texts(uniq).to_pylist(), dtype=object)[inverse]
        return out

    def sort_rank(self, ids: np.ndarray) -> np.ndarray:
        """Integer ranks that order rows by their string (missing first; byte order of UTF-8
        is code point order)."""
        uniq, inverse = distinct(ids)
        missing = int(np.searchsorted(uniq, 0))  # the negative ids come first
        order = to_numpy(pc.sort_indices(self.texts(uniq[missing:])), np.dtype(np.uint64)).astype(np.int64)
        rank = np.empty(len(uniq), dtype=np.int64)
        rank[np.concatenate([np.arange(missing), missing + order])] = np.arange(len(uniq))
        return rank[inverse]
