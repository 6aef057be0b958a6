"""Frame columns gathered when written (engine.Gathered) print like the gathered arrays."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.analysis.declarations import RowsOptions, Rule
from asysstats.compute.distinct import Coded
from asysstats.core.result import INT, TEXT, Column, Gathered, Result
from asysstats.core.strings import StringPool
from asysstats.core.tables import NA
from asysstats.writing import writers

RULE = Rule("demo", "Demo", "A demo rule.", (Column("Id", INT, ""), Column("Name", TEXT, "")), lambda i, o: {},
            {"kernels": ()}, options=RowsOptions)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-3, 5), max_size=12), st.lists(st.integers(0, 11), max_size=40),
       st.sampled_from([3, 1000]), st.one_of(st.none(), st.integers(1, 50)))
def test_gathered_columns_print_like_their_gathered_values(values, picks, chunk, rows):
    pool = StringPool()
    words = pool.intern(["a", "b,c", 'say "hi"'])
    base = np.array(values + [0], dtype=np.int64)
    index = np.array([p % len(base) for p in picks], dtype=np.int64)
    ids = np.where(base >= 0, words[np.abs(base) % 3], -1)
    numbers = np.where(base == -3, NA, base)
    lazy = RULE.shaped(RowsOptions(rows=rows), {"Id": Gathered(numbers, index), "Name": Gathered(ids, index)}, pool)
    plain = RULE.shaped(RowsOptions(rows=rows), {"Id": numbers[index], "Name": ids[index]}, pool)
    assert lazy.rows == plain.rows and np.asarray(lazy.frame["Id"]).tolist() == plain.frame["Id"].tolist()
    writers.CHUNK_ROWS, saved = chunk, writers.CHUNK_ROWS
    try:
        for writer in (writers.to_csv, writers.to_column, writers.to_json):
            assert writer(lazy) == writer(plain)
    finally:
        writers.CHUNK_ROWS = saved


def test_a_gathered_slice_is_the_gathered_rows():
    column = Gathered(np.array([10, 20, 30]), np.array([2, 2, 0, 1]))
    assert len(column) == 4 and column[1:3].tolist() == [30, 10]
    assert np.asarray(column, dtype=np.float64).tolist() == [30.0, 30.0, 10.0, 20.0]
    assert isinstance(Result(RULE.name, RULE.title, RULE.share, RULE.columns, {"Id": column, "Name": column}, StringPool()).rows, int)


def test_a_gathered_function_is_computed_for_the_rows_read():
    start, end = np.array([5, 10, 20]), np.array([6, 15, 40])
    asked = []
    column = Gathered(lambda rows: asked.append(rows.tolist()) or end[rows] - start[rows], np.array([2, 0, 1, 2]))
    assert column[1:3].tolist() == [1, 5] and asked == [[0, 1]]
    assert np.asarray(column).tolist() == [20, 1, 5, 20]


WIDE = Rule("wide", "Wide", "A demo rule.", tuple(Column(f"c{i}", kind, "") for i, kind in enumerate(
    (INT, INT, TEXT, INT, INT, TEXT, INT))), lambda i, o: {}, {"kernels": ()})


@settings(max_examples=25, deadline=None)
@given(st.integers(200, 3000), st.integers(0, 2 ** 32 - 1), st.sampled_from([7, 1000, 1 << 18]))
def test_columns_coded_and_combined_once_print_like_their_gathered_values(rows, seed, chunk):
    """Columns gathered through one index are coded over the values they gather from and
    combined (a ``Coded`` column among them, floats with NaN); a function of the rows and a
    column over a longer array are not combined with them."""
    rng = np.random.default_rng(seed)
    pool = StringPool()
    words = pool.intern(["a", "b,c", 'say "hi"'])
    base = 2000
    index = rng.integers(0, base, rows)
    few = np.where(rng.random(base) < 0.1, NA, rng.integers(0, 4, base) * 100)
    coded = Coded.of(rng.integers(0, 3, base))
    ids = np.where(rng.random(base) < 0.2, -1, words[rng.integers(0, 3, base)])
    floats = np.where(rng.random(base) < 0.5, np.nan, rng.integers(0, 5, base) * 1.7)
    longer = rng.integers(0, 3, base + 1)
    lazy = {"c0": Gathered(few, index), "c1": Gathered(coded, index), "c2": Gathered(ids, index),
            "c3": Gathered(floats, index), "c4": Gathered(lambda r: few[r] // 2, index),
            "c5": Gathered(ids, index), "c6": Gathered(longer, index)}
    plain = {"c0": few[index], "c1": coded.rows()[index], "c2": ids[index], "c3": floats[index],
             "c4": few[index] // 2, "c5": ids[index], "c6": longer[index]}
    writers.CHUNK_ROWS, saved = chunk, writers.CHUNK_ROWS
    try:
        expected = writers.to_csv(Result(WIDE.name, WIDE.title, WIDE.share, WIDE.columns, plain, pool))
        assert writers.to_csv(Result(WIDE.name, WIDE.title, WIDE.share, WIDE.columns, lazy, pool)) == expected
        assert expected.count("\n") == rows + 1 and '"b,c"' in expected
    finally:
        writers.CHUNK_ROWS = saved


def test_a_coded_column_is_gathered_by_its_codes():
    column = Gathered(Coded(np.array([-1, 7, 9]), np.array([2, 0, 1, 1], dtype=np.uint8)), np.array([3, 0]))
    assert np.asarray(column).tolist() == [7, 9]
