"""The Arrow string pool against the dictionary pool it replaced (same ids for the same calls),
and the fingerprint index against brute force. Texts are drawn to share lengths, prefixes,
middles and suffixes (fingerprint collisions), with empty, non-ASCII and NUL characters."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.compute import textindex
from asysstats.compute.arrow import from_texts
from asysstats.compute.distinct import DERIVED_BASE
from asysstats.compute.textindex import TextIndex, fingerprints
from asysstats.core.strings import StringPool

SETTINGS = settings(max_examples=150, deadline=None)
texts = st.one_of(st.text("ab", max_size=40), st.text("ab-é\0", max_size=6), st.sampled_from(["Memset", "x" * 30]))
REPORT = {i: t for i, t in enumerate(["ab", "b", "ab", "", "Memset", "é", "ab" * 12])}  # id 2 repeats id 0
report_ids = st.integers(0, len(REPORT) + 1)  # the last two ids are not in the report


class DictPool:
    """The pool before Arrow: Python dictionaries, one id per distinct value, first known wins."""

    def __init__(self) -> None:
        self.by_id: dict[int, str] = {}
        self.by_value: dict[str, int] = {}
        self.next = DERIVED_BASE

    def load(self, ids: list[int]) -> None:
        for key in sorted({i for i in ids if i not in self.by_id and i in REPORT}):
            self.by_id[key] = REPORT[key]
            self.by_value.setdefault(REPORT[key], key)

    def intern(self, values: list[str]) -> list[int]:
        for value in values:
            if value not in self.by_value:
                self.by_value[value], self.by_id[self.next] = self.next, value
                self.next += 1
        return [self.by_value[v] for v in values]

    def text(self, key: int) -> str | None:
        self.load([key])
        return None if key < 0 else self.by_id.get(key, f"<unknown string {key}>")


def fetch(keys: list[int]) -> list[tuple[int, str]]:
    return [(k, REPORT[k]) for k in keys if k in REPORT]


operations = st.lists(st.one_of(
    st.tuples(st.just("intern"), st.lists(texts, max_size=8)),
    st.tuples(st.just("bulk"), st.lists(st.one_of(st.none(), texts), max_size=30)),
    st.tuples(st.just("load"), st.lists(report_ids, max_size=5)),
), max_size=8)


def bulk_reference(reference: DictPool, values: list[str | None]) -> list[int]:
    """What ``text_ids`` gave: the column's distinct values interned in order of first occurrence."""
    present = list(dict.fromkeys(v for v in values if v is not None))
    ids = dict(zip(present, reference.intern(present)))
    return [-1 if v is None else ids[v] for v in values]


def as_column(values: list[str | None], form: str) -> pa.Array | pa.ChunkedArray:
    """The texts as a plain chunk, a dictionary-encoded array, or slices of 3 each encoded on its
    own (as the SQLite reader reads a table: a dictionary a slice, all-null slices too)."""
    array = from_texts(values)
    if form == "plain":
        return pa.chunked_array([array])
    if form == "encoded":
        return pc.dictionary_encode(array)
    return pa.chunked_array([pc.dictionary_encode(array[at:at + 3]) for at in range(0, len(values), 3)],
                            pa.dictionary(pa.int32(), pa.string()))


@SETTINGS
@given(operations, st.sampled_from(["plain", "encoded", "slices"]))
def test_interning_gives_the_ids_of_the_dictionary_pool(ops, form):
    pool, reference = StringPool(fetch), DictPool()
    seen = []
    for op, values in ops:
        if op == "intern":  # as Python strings, or as one Arrow array (duplicates included)
            given = from_texts(values) if form == "plain" else values
            assert pool.intern(given).tolist() == reference.intern(values)
        elif op == "bulk":
            got = pool.intern_texts(as_column(values, form))
            assert got.tolist() == bulk_reference(reference, values)
        else:
            pool.load(values)
            reference.load(values)
        seen += [reference.by_value[v] if isinstance(v, str) else v for v in values if v is not None]
    ids = np.array(seen + [-1], dtype=np.int64)
    expected = [reference.text(int(i)) for i in ids]
    assert pool.lookup(ids).tolist() == expected
    assert pool.texts(ids, "-").to_pylist() == [e if e is not None else "-" for e in expected]
    known = dict(reference.by_value)
    canonical = pool.canonical(ids)
    assert pool.lookup(canonical).tolist() == expected
    assert len(set(canonical.tolist())) == len(set(expected))  # one id per text
    assert all(c == known[e] for c, e in zip(canonical.tolist(), expected) if e in known)
    coded = pool.canonical_coded(ids)
    assert coded.values.tolist() == sorted(set(canonical.tolist()))  # distinct, ascending: a Coded's values
    by_text = sorted(range(len(ids)), key=lambda i: (expected[i] is not None, expected[i] or ""))
    rank = pool.sort_rank(ids)
    assert [expected[i] for i in np.argsort(rank, kind="stable")] == [expected[i] for i in by_text]


@SETTINGS
@given(st.lists(st.one_of(st.none(), texts), max_size=30))
def test_stored_dictionary_interns_back_to_the_same_ids(values):
    pool = StringPool()
    ids = pool.intern_texts(from_texts(values))
    assert pool.intern_texts(pool.dictionary(ids)[0]).tolist() == ids.tolist()
    fresh = StringPool()
    assert fresh.lookup(fresh.intern_texts(pool.dictionary(ids)[0])).tolist() == values


@pytest.mark.parametrize("pairs", [textindex.PAIRS_PER_STRING, -1])  # -1: always Arrow's hash set
def test_text_index_finds_the_first_equal_string(pairs):
    @SETTINGS
    @given(st.lists(texts, max_size=30), st.lists(texts, max_size=10), st.integers(0, 3))
    def check(values, query, start):
        array = from_texts(["pad"] * start + values).slice(start)  # an offset into the buffers
        index = TextIndex(array)
        assert index.find(from_texts(query)).tolist() == [values.index(q) if q in values else -1 for q in query]
        assert index.first_equal().tolist() == [values.index(v) for v in values]

    default, textindex.PAIRS_PER_STRING = textindex.PAIRS_PER_STRING, pairs
    try:
        check()
    finally:
        textindex.PAIRS_PER_STRING = default


@SETTINGS
@given(st.lists(texts, max_size=20))
def test_equal_strings_have_equal_fingerprints_wherever_they_lie(values):
    plain = fingerprints(from_texts(values))
    reversed_large = fingerprints(from_texts(values[::-1]).cast(pa.large_string()))[::-1]
    assert plain.tolist() == reversed_large.tolist()



def test_fingerprints_of_long_strings_over_several_batches():
    """Strings of 0 to 600 bytes (past ``HASHED_BYTES``), more than a batch of them, in another
    order and at the end of the data: equal strings have equal fingerprints, and strings that
    differ in one byte (hashed, or among the last eight) do not."""
    rng = np.random.default_rng(5)
    values = ["".join(rng.choice(list("abé\0"), size=rng.integers(0, 600))) for _ in range(3 * textindex.BATCH)]
    keys = fingerprints(from_texts(values))
    order = rng.permutation(len(values))
    assert fingerprints(from_texts([values[i] for i in order])).tolist() == keys[order].tolist()
    for value in values[:50]:  # alone at the end of the data buffer
        assert fingerprints(from_texts(["pad", value]))[1] == keys[values.index(value)]
    base = "x" * 300
    changed = [base[:at] + "y" + base[at + 1:] for at in (0, 7, 8, 100, 255, 292, 299)]
    assert len(set(fingerprints(from_texts([base] + changed)).tolist())) == 1 + len(changed)


@SETTINGS
@given(st.lists(st.tuples(st.lists(st.one_of(st.none(), texts), max_size=30), st.booleans()), max_size=6),
       st.lists(report_ids, max_size=5))
def test_given_fingerprints_give_the_same_ids_and_the_stored_dictionary_gives_them_back(columns, loaded):
    """Interning dictionaries with their fingerprints (as the column cache gives them) gives the
    ids interning them without gives; ``dictionary`` gives the fingerprints of its strings, from
    the blocks or computed (report ids no block holds: a repeated or unknown report string)."""
    with_keys, without = StringPool(fetch), StringPool(fetch)
    with_keys.load(loaded)
    without.load(loaded)
    every = []
    for values, known in columns:
        column = pc.dictionary_encode(from_texts(values))
        keys = [fingerprints(column.dictionary)] if known else None
        ids = with_keys.intern_texts(pa.chunked_array([column]), keys)
        assert ids.tolist() == without.intern_texts(pa.chunked_array([column])).tolist()
        every += ids.tolist()
    every += loaded
    dictionary, keys = with_keys.dictionary(np.array(every, np.int64))
    assert keys.tolist() == fingerprints(dictionary.dictionary).tolist()


def test_text_index_uses_the_fingerprints_it_is_given():
    values = from_texts(["b", "a", "b", "ccc"])
    index = TextIndex(values, fingerprints(values))
    assert index.keys().tolist() == fingerprints(values).tolist()
    assert index.first_equal().tolist() == [0, 1, 0, 3]
    assert index.find(from_texts(["ccc", "d", "a"])).tolist() == [3, -1, 1]
