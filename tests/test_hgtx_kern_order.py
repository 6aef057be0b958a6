"""The order of hgtx_kern_trace's rows (asysstats.rulebook.hgtx_kernels.start_order and sorted_pairs)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.core.strings import StringPool
from asysstats.rulebook.hgtx_kernels import sorted_pairs, start_order


@st.composite
def pairs(draw):
    kernels, ranges = draw(st.integers(1, 6)), draw(st.integers(0, 5))
    cells = [(k, r) for k in range(kernels) for r in range(-1, ranges)]
    chosen = draw(st.lists(st.sampled_from(cells), unique=True, max_size=len(cells)))
    graph = draw(st.lists(st.booleans(), min_size=len(chosen), max_size=len(chosen)))
    kernel_order = draw(st.permutations(range(kernels)))
    range_order = draw(st.permutations(range(ranges)))
    return chosen, graph, kernel_order, range_order


@settings(max_examples=80, deadline=None)
@given(pairs())
def test_pairs_sort_by_kernel_position_then_range_position_standalone_first(drawn):
    chosen, graph, kernel_order, range_order = drawn
    k = np.array([c[0] for c in chosen], np.int32)
    r = np.array([c[1] for c in chosen], np.int32)
    got = sorted_pairs(k, r, np.array(graph, bool), np.array(kernel_order, np.int64),
                       np.array(range_order, np.int64))
    position = {row: i for i, row in enumerate(range_order)} | {-1: -1}
    expected = sorted(zip(k.tolist(), r.tolist(), graph),
                      key=lambda p: (kernel_order.index(p[0]), position[p[1]]))
    assert [column.tolist() for column in got] == ([list(c) for c in zip(*expected)] or [[], [], []])
    assert got[0].dtype == np.int32 and got[1].dtype == np.int32 and got[2].dtype == bool


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.sampled_from(["b", "a", "ab", "", "é"])), max_size=30))
def test_start_order_sorts_by_start_then_name_text_then_id(rows):
    strings = StringPool()
    start = np.array([r[0] for r in rows], np.int64)
    names = strings.intern([r[1] for r in rows]) if rows else np.empty(0, np.int64)
    ids = np.arange(len(rows), dtype=np.int64) * 3
    got = start_order(strings, start, names, ids)
    assert got.tolist() == sorted(range(len(rows)), key=lambda i: (rows[i][0], rows[i][1].encode(), ids[i]))
