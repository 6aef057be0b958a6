"""JSON made with Arrow's string kernels is what ``json.dumps`` prints of the typed rows."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.analysis.declarations import Rule
from asysstats.compute.arrow import from_texts
from asysstats.core.result import DECIMAL, INT, PAIR_INT, PAIR_PERCENT, PAIR_TEXT, PERCENT, RATIO, TEXT, Column, Result
from asysstats.core.strings import StringPool
from asysstats.core.tables import NA
from asysstats.writing import writers
from asysstats.writing.jsonlines import float_text

COLUMNS = (Column("Count", INT, ""), Column("Truncated", INT, ""), Column("Time (%)", PERCENT, ""),
           Column("Ratio", RATIO, ""), Column('Value "x"', DECIMAL, ""), Column("Name", TEXT, ""),
           Column("Label", TEXT, ""), Column("Stack", TEXT, ""), Column("Counts", PAIR_INT, ""),
           Column("Shares", PAIR_PERCENT, ""), Column("Names", PAIR_TEXT, ""))
RULE = Rule("demo", "Demo", "A demo rule.", COLUMNS, lambda i, o: {}, {"kernels": ()})

words = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=8)
integers = st.one_of(st.integers(-2 ** 62, 2 ** 62), st.just(NA))
floats = st.one_of(st.floats(-9e15, 9e15), st.just(float("nan")), st.sampled_from([2.25, 0.05, -0.04, 1e12 + 0.5]))


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(0, 3), st.sampled_from([4, 1000]), st.sampled_from([1, 2]))
def test_json_is_what_json_dumps_prints_of_the_typed_rows(data, decimals, chunk, formatters):
    rows = data.draw(st.integers(0, 12))
    pool = StringPool()
    ids = pool.intern(data.draw(st.lists(words, min_size=1, max_size=4, unique=True)))
    column = {
        INT: lambda: np.array(data.draw(st.lists(integers, min_size=rows, max_size=rows)), dtype=np.int64),
        "float": lambda: np.array(data.draw(st.lists(floats, min_size=rows, max_size=rows)), dtype=np.float64),
        "ids": lambda: np.array(data.draw(st.lists(st.sampled_from(list(ids) + [-1]), min_size=rows,
                                                   max_size=rows)), dtype=np.int64),
        "objects": lambda: np.array(data.draw(st.lists(st.one_of(st.none(), words), min_size=rows, max_size=rows))
                                    + [None], dtype=object)[:rows],
    }
    frame = {"Count": column[INT](), "Truncated": column["float"](), "Time (%)": column["float"](),
             "Ratio": column["float"](), 'Value "x"': column["float"](), "Name": column["ids"](),
             "Label": column["objects"](),
             "Stack": from_texts(data.draw(st.lists(words, min_size=rows, max_size=rows))),
             "Counts": np.stack([column[INT](), column[INT]()], axis=1).reshape(rows, 2),
             "Shares": np.stack([column["float"](), column["float"]()], axis=1).reshape(rows, 2),
             "Names": np.stack([column["objects"](), column["objects"]()], axis=1).reshape(rows, 2)}
    result = Result(RULE.name, RULE.title, RULE.share, COLUMNS, frame, pool)
    expected = json.dumps(writers.rows_as_records(result, decimals), indent=1, ensure_ascii=False) + "\n"
    writers.CHUNK_ROWS, writers.FORMATTERS, saved = chunk, formatters, (writers.CHUNK_ROWS, writers.FORMATTERS)
    try:
        assert writers.to_json(result, decimals) == expected
    finally:
        writers.CHUNK_ROWS, writers.FORMATTERS = saved


def test_floats_print_as_python_prints_them():
    units = np.array([247, -5, 30, 0, 10 ** 15 + 1, 10 ** 17, np.iinfo(np.int64).min])
    assert float_text(units, 1).to_pylist() == ["24.7", "-0.5", "3.0", "0.0", "100000000000000.1", "1e+16",
                                                "-9.223372036854776e+17"]
    assert float_text(np.array([250, 7, -1200]), 2).to_pylist() == ["2.5", "0.07", "-12.0"]
    assert float_text(np.array([13, -2]), 0).to_pylist() == ["13.0", "-2.0"]
