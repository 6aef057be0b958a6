"""CSV lines: columns of few values coded and combined, the others per row, against a
brute-force formatter of every cell."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.analysis.declarations import Rule
from asysstats.core.result import INT, TEXT, Column, Result
from asysstats.core.strings import StringPool
from asysstats.core.tables import NA
from asysstats.writing import csvlines, writers

WORDS = ['plain', 'say "hi"', "a,b", "", "ünï"]


def expected(kinds: list[str], columns: list[list], pool: StringPool) -> str:
    lines = [",".join(["Row#"] + [f"c{i}" for i in range(len(kinds))]) + ","]
    for row, cells in enumerate(zip(*columns), start=1):
        out = [str(row)]
        for kind, value in zip(kinds, cells):
            if kind == INT:
                out.append('"-"' if value == NA else str(value))
            else:
                out.append('"-"' if value < 0 else '"' + pool.text(value).replace('"', '""') + '"')
        lines.append(",".join(out) + ",")
    return "\n".join(lines) + "\n"


column = st.one_of(
    st.tuples(st.just(INT), st.sampled_from([3, 2000, 10 ** 12]), st.booleans()),
    st.tuples(st.just(TEXT), st.just(len(WORDS)), st.booleans()))


@settings(max_examples=40, deadline=None)
@given(st.lists(column, min_size=1, max_size=6), st.integers(1, 3000), st.integers(0, 2 ** 32 - 1),
       st.sampled_from([7, 1000, 1 << 18]), st.sampled_from([1, 2, 5]))
def test_csv_lines_match_each_cell_formatted_alone(spec, rows, seed, chunk, repeat):
    """``repeat``: each row's values repeat in up to that many consecutive rows in some
    columns (runs of equal rows, formatted once per run)."""
    rng = np.random.default_rng(seed)
    runs = np.repeat(np.arange(rows), rng.integers(1, repeat + 1, rows))[:rows]
    pool = StringPool()
    ids = pool.intern(WORDS)
    kinds, frame = [], {}
    for i, (kind, spread, missing) in enumerate(spec):
        if kind == INT:
            values = rng.integers(-spread, spread, rows)
            values[rng.random(rows) < 0.2 * missing] = NA
        else:
            values = ids[rng.integers(0, spread, rows)]
            values[rng.random(rows) < 0.2 * missing] = -1
        if rng.random() < 0.7:
            values = values[runs]
        kinds.append(kind)
        frame[f"c{i}"] = values
    rule = Rule("demo", "Demo", "A demo rule.", tuple(Column(f"c{i}", k, "") for i, k in enumerate(kinds)),
                lambda i, o: {}, {"kernels": ()})
    result = Result(rule.name, rule.title, rule.share, rule.columns, frame, pool)
    writers.CHUNK_ROWS, saved = chunk, writers.CHUNK_ROWS
    try:
        assert writers.to_csv(result) == expected(kinds, [frame[f"c{i}"].tolist() for i in range(len(kinds))], pool)
    finally:
        writers.CHUNK_ROWS = saved


def test_run_groups_join_columns_while_the_runs_are_few():
    repeated = np.repeat(np.arange(4), 3)  # 4 runs of 3 rows
    alone = np.arange(12)  # every row differs
    columns = [repeated, repeated * 2, alone, repeated, np.ones(12), alone, repeated, repeated]
    groups = csvlines.run_groups(columns, [False, True, True, False, True, True, False, False])
    assert [g for g, _ in groups] == [(0, 2), (2, 3), (3, 5), (5, 6), (6, 7), (7, 8)]
    assert groups[0][1].tolist() == (np.arange(12) % 3 == 0).tolist()
    assert [runs is None for _, runs in groups] == [False, True, False, True, True, True]  # no column per row: coded
    assert [g for g, _ in csvlines.run_groups([np.zeros(0, np.int64)], [True])] == [(0, 1)]


def test_changes_of_pairs_and_floats():
    pairs = np.array([[1, 2], [1, 2], [1, 3], [1, 3]])
    assert csvlines.changes(pairs).tolist() == [True, False, True, False]
    assert csvlines.changes(pairs[:1]).tolist() == [True]
    assert csvlines.changes(np.array([np.nan, np.nan, 1.0])).tolist() == [True, True, True]
    assert csvlines.changes(np.array(["a", "a"], dtype=object)) is None
