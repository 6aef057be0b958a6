"""The outermost operator range of each activity per class, against a brute-force reference."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from asysstats.analysis.correlate import Points
from asysstats.analysis.operators.analysis import outermost
from asysstats.core.tables import EventTable

ranges = st.lists(st.tuples(st.integers(0, 1), st.integers(0, 4), st.integers(0, 4), st.integers(0, 2),
                            st.integers(0, 2)), min_size=1, max_size=8)  # thread, start, length, rangeId, class
anchor = st.none() | st.tuples(st.integers(0, 1), st.integers(0, 8))  # thread, time


class Placed:
    """Anchors as :class:`asysstats.analysis.correlate.Anchors` lists them: launch calls, then
    creations; in one pass, or (``by_thread``) a thread at a time, as past ``correlate.SET_ANCHORS``."""

    def __init__(self, kinds: list[list], by_thread: bool) -> None:
        self.kinds = [Points(*(np.array([p[i] for p in kind], dtype=np.int64) for i in range(3))) for kind in kinds]
        self.by_thread = by_thread

    def points(self) -> list[Points]:
        return self.kinds

    def thread_sets(self, threads: np.ndarray) -> list[np.ndarray] | None:
        return [np.array([thread]) for thread in np.unique(threads)] if self.by_thread else None


@settings(max_examples=300, deadline=None)
@given(ranges, st.lists(st.tuples(anchor, anchor), min_size=1, max_size=4), st.booleans())
@example([(0, 0, 4, 0, 0), (1, 2, 2, 1, 0)], [((1, 3), (0, 3))], True)  # the creation's thread comes first
def test_outermost_is_the_earliest_start_then_latest_end_then_lowest_id(items, activities, by_thread) -> None:
    """A range holding an activity's launch call links it directly, one holding only its graph
    node's creation by graph mapping; the outermost of them wins, a direct link on a tie. The
    same a thread at a time, where an activity's creation may sit on another thread than its launch."""
    thread, start, length, range_id, klass = (np.array([r[i] for r in items], dtype=np.int64) for i in range(5))
    ops = EventTable({"globalTid": thread, "start": start, "end": start + length, "rangeId": range_id})
    launched = [(a, *launch) for a, (launch, _) in enumerate(activities) if launch]
    created = [(a, *creation) for a, (_, creation) in enumerate(activities) if creation]
    out = outermost(Placed([launched, created], by_thread), ops, klass, len(activities), (0, 1, 2))

    def holds(row: int, at) -> bool:
        return at is not None and at[0] == thread[row] and start[row] <= at[1] < start[row] + length[row]

    for k in (0, 1, 2):
        for act, (launch, creation) in enumerate(activities):
            found = [(start[r], -length[r] - start[r], range_id[r], not holds(r, launch), r)
                     for r in range(len(items)) if klass[r] == k and (holds(r, launch) or holds(r, creation))]
            best = min(found) if found else None
            assert out[k][act] == (best[4] if best else -1)
            assert out[k, "graph"][act] == (bool(best[3]) if best else False)
