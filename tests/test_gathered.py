"""Frame columns gathered when written (engine.Gathered) print like the gathered arrays."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from asysstats.engine import Gathered, Result, shaped
from asysstats.io import writers
from asysstats.io.strings import StringPool
from asysstats.io.tables import NA
from asysstats.registry import INT, ROWS, TEXT, Column, Rule

RULE = Rule("demo", "Demo", "A demo rule.", (Column("Id", INT, ""), Column("Name", TEXT, "")), lambda i, o: {},
            ("kernels",), options=(ROWS,))


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
    lazy = shaped(RULE, {"rows": rows}, {"Id": Gathered(numbers, index), "Name": Gathered(ids, index)}, pool)
    plain = shaped(RULE, {"rows": rows}, {"Id": numbers[index], "Name": ids[index]}, pool)
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
    assert isinstance(Result(RULE, RULE.columns, {"Id": column, "Name": column}, StringPool()).rows, int)


def test_a_gathered_function_is_computed_for_the_rows_read():
    start, end = np.array([5, 10, 20]), np.array([6, 15, 40])
    asked = []
    column = Gathered(lambda rows: asked.append(rows.tolist()) or end[rows] - start[rows], np.array([2, 0, 1, 2]))
    assert column[1:3].tolist() == [1, 5] and asked == [[0, 1]]
    assert np.asarray(column).tolist() == [20, 1, 5, 20]
