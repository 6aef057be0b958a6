"""The outermost operator range of each activity per class, against a brute-force reference."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.analysis.correlate import Pairs
from asysstats.analysis.operators.analysis import outer_order, outermost
from asysstats.core.tables import EventTable

ranges = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 2), st.integers(0, 2)),
                  min_size=1, max_size=8)  # start, length, rangeId, class


@settings(max_examples=300, deadline=None)
@given(ranges, st.data())
def test_outermost_is_the_earliest_start_then_latest_end_then_lowest_id(items, data) -> None:
    start = np.array([s for s, _, _, _ in items], dtype=np.int64)
    ops = EventTable({"start": start, "end": start + [n for _, n, _, _ in items],
                      "rangeId": np.array([i for _, _, i, _ in items], dtype=np.int64)})
    klass = np.array([c for _, _, _, c in items], dtype=np.int64)
    links = data.draw(st.lists(st.tuples(st.integers(0, len(items) - 1), st.integers(0, 3), st.booleans()),
                               max_size=12))  # (range row, activity, via graph); repeats allowed
    pairs = Pairs(*(np.array([p[i] for p in links], dtype=np.int64 if i < 2 else bool) for i in range(3)))
    out = outermost(pairs, outer_order(pairs, ops), klass, 4, (0, 1, 2))
    for k in (0, 1, 2):
        for act in range(4):
            found = [(ops["start"][r], -ops["end"][r], ops["rangeId"][r], n, r, g)
                     for n, (r, a, g) in enumerate(links) if a == act and klass[r] == k]
            best = min(found) if found else None
            assert out[k][act] == (best[4] if best else -1)
            assert out[k, "graph"][act] == (best[5] if best else False)
