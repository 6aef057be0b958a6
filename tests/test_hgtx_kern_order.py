"""The sort positions that order hgtx_kern_trace (asysstats.rules.hgtx_kernels.positions)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.rules.hgtx_kernels import positions

rows = st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3), st.integers(-3, 3)), max_size=40)


@settings(max_examples=80, deadline=None)
@given(rows)
def test_positions_rank_rows_by_their_keys_last_key_first(values):
    keys = np.array(values, dtype=np.int64).reshape(-1, 3)
    got = positions((keys[:, 0], keys[:, 1], keys[:, 2]))
    brute = sorted(range(len(values)), key=lambda i: (values[i][2], values[i][1], values[i][0], i))
    assert got.tolist() == [brute.index(i) for i in range(len(values))]
