"""The HGTX core (asysstats.analysis.hgtx, nesting, launches, correlate): range loading and nesting,
correlation with activities, projection, innermost names — against brute force."""

from __future__ import annotations

import tempfile
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.analysis import correlate as correlate_module
from asysstats.analysis.correlate import correlate, ppu_activities, project
from asysstats.analysis.hgtx import all_ranges
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.launches import innermost_range_names
from asysstats.analysis.nesting import nesting
from asysstats.compute import intervals
from asysstats.core.tables import NA
from asysstats.reading.sqlite import SqliteReport
from asysstats.synth.writer import ReportWriter

SETTINGS = settings(max_examples=40, deadline=None)
PUSHPOP, STARTEND, MARK, DOMAIN = 59, 60, 34, 75


def gtid(pid: int, tid: int) -> int:
    return (pid << 24) | tid


def nest(rows: list[tuple[int, int, int]]) -> dict[str, list[int]]:
    """nesting() of (thread, start, end) push/pop rows, ids 1..n."""
    a = np.array(rows, dtype=np.int64).reshape(-1, 3)
    out = nesting(a[:, 0], a[:, 1], a[:, 2], np.ones(len(a), bool), np.arange(1, len(a) + 1))
    return {k: v.tolist() for k, v in out.items()}


def test_nesting_four_deep_with_siblings_on_two_threads():
    # thread 1:  A [0 ............................... 100)
    #              B [10 .................. 60)   E [60 .. 90)    (B and E touch: siblings)
    #                C [20 ........ 50)
    #                  D [30 .. 40)
    # thread 2:  F [5 .. 95)  (same times as thread 1 would not nest across threads)
    got = nest([(1, 0, 100), (1, 10, 60), (1, 20, 50), (1, 30, 40), (1, 60, 90), (2, 5, 95)])
    assert got["level"] == [0, 1, 2, 3, 1, 0]
    assert got["parentId"] == [NA, 1, 2, 3, 1, NA]
    assert got["children"] == [2, 1, 1, 0, 0, 0]
    assert got["childTime"] == [50 + 30, 30, 10, 0, 0, 0]


def test_nesting_edge_cases_identical_and_empty_ranges():
    # identical [0, 10) twice: the earlier row is the parent; an empty range at the start of
    # a range nests inside it; an empty range where a range ends does not
    got = nest([(1, 0, 10), (1, 0, 10), (1, 0, 0), (1, 10, 10), (1, 10, 20)])
    assert got["level"] == [0, 1, 2, 1, 0]
    assert got["parentId"] == [NA, 1, 2, 5, NA]


def stack_program(ops: list[tuple[bool, int]]) -> tuple[list[tuple[int, int]], list[int]]:
    """Push/pop ops at strictly increasing times -> ranges (start, end) in push order and
    the true parent index of each (-1 at the bottom of the stack)."""
    t, stack, ranges, parent = 0, [], [], []
    for push, step in ops + [(False, 1)] * len(ops):
        t += step
        if push:
            parent.append(stack[-1] if stack else -1)
            ranges.append([t, None])
            stack.append(len(ranges) - 1)
        elif stack:
            ranges[stack.pop()][1] = t
    return [(s, e) for s, e in ranges], parent


program = st.lists(st.tuples(st.booleans(), st.integers(1, 5)), max_size=25)


@SETTINGS
@given(st.lists(program, min_size=1, max_size=3), st.randoms(use_true_random=False))
def test_nesting_matches_the_stack_that_built_it(programs, rnd):
    rows, truth = [], []
    for thread, ops in enumerate(programs):
        ranges, parent = stack_program(ops)
        base = len(rows)
        rows += [(thread, s, e) for s, e in ranges]
        truth += [(p + base if p >= 0 else -1) for p in parent]
    order = list(range(len(rows)))
    rnd.shuffle(order)  # rows need not be in push order
    got = nest([rows[i] for i in order])
    for pos, i in enumerate(order):
        want = truth[i]
        want_id = order.index(want) + 1 if want >= 0 else NA
        assert got["parentId"][pos] == want_id
        depth, p = 0, want
        while p >= 0:
            depth, p = depth + 1, truth[p]
        assert got["level"][pos] == depth
        kids = [j for j in range(len(rows)) if truth[j] == i]
        assert got["children"][pos] == len(kids)
        assert got["childTime"][pos] == sum(rows[j][2] - rows[j][1] for j in kids)


def test_ranges_table_names_domains_marks_and_cross_thread_ends(writer):
    t1, t2, other = gtid(5, 1), gtid(5, 2), gtid(6, 1)
    name = writer.string("from textId")
    writer.add("hgtx", start=[1, 2, 3, 4, 5, 6, 7], end=[None, None, 50, 40, 60, None, 30],
               eventType=[DOMAIN, DOMAIN, PUSHPOP, PUSHPOP, STARTEND, MARK, PUSHPOP],
               text=["NCCL", "elsewhere", "outer", None, "async", "a mark", "same id, other process"],
               textId=[None, None, None, name, None, None, None],
               globalTid=[t1, other, t1, t1, t1, t1, other], endGlobalTid=[None, None, None, None, t2, None, None],
               domainId=[3, 3, 0, 3, 3, 0, 0])
    writer.close()
    report = SqliteReport(writer.path)
    ranges = all_ranges(Inputs(report))
    names = report.strings.lookup(ranges["name"]).tolist()
    assert names == ["outer", "NCCL:from textId", "NCCL:async", "same id, other process"]
    assert ranges["rangeId"].tolist() == [3, 4, 5, 7]
    assert report.strings.lookup(ranges["style"]).tolist() == ["PushPop", "PushPop", "StartEnd", "PushPop"]
    assert ranges["tid"].tolist() == [1, 1, 1, 1]  # a start/end range belongs to its starting thread
    assert ranges["level"].tolist() == [0, 1, 0, 0] and ranges["parentId"].tolist() == [NA, 3, NA, NA]


def test_missing_end_lasts_until_the_last_hgtx_timestamp(writer):
    writer.add("hgtx", start=[10, 20], end=[None, 500], eventType=[PUSHPOP, STARTEND], text=["open", "x"],
               globalTid=gtid(1, 1), domainId=0)
    writer.close()
    ranges = all_ranges(Inputs(SqliteReport(writer.path)))
    assert ranges["end"].tolist() == [500, 500]


# -- correlation and projection against brute force --------------------------------------------
events = st.fixed_dictionaries({
    "ranges": st.lists(st.tuples(st.integers(0, 1), st.integers(0, 40), st.integers(1, 60)), min_size=1, max_size=8),
    "calls": st.lists(st.tuples(st.integers(0, 1), st.integers(0, 60)), min_size=2, max_size=8),
    "kernels": st.lists(st.tuples(st.integers(-1, 7), st.integers(0, 120), st.integers(0, 15),
                                  st.integers(-1, 2), st.integers(0, 1)), min_size=2, max_size=12),
    "nodes": st.lists(st.tuples(st.integers(0, 2), st.integers(-1, 2), st.integers(0, 1), st.integers(0, 60)),
                      min_size=1, max_size=6),
})


def write_events(path: Path, ev: dict) -> None:
    """Ranges (start/end style, so they may overlap anyhow) and calls (correlation ids 1..n)
    on threads 0/1 of pid 1; kernels (correlation id, start, duration, graph node, kind 0
    kernel / 1 memcpy); graph
    nodes (id, original id, thread, creation time)."""
    w = ReportWriter(path)
    if ev["ranges"]:
        w.add("hgtx", start=[r[1] for r in ev["ranges"]], end=[r[1] + r[2] for r in ev["ranges"]],
              eventType=STARTEND, text=[f"r{i % 3}" for i in range(len(ev["ranges"]))],
              globalTid=[gtid(1, r[0]) for r in ev["ranges"]], domainId=0)
    else:
        w.create("hgtx")
    w.add("runtime", start=[c[1] for c in ev["calls"]] or [0], end=[c[1] + 1 for c in ev["calls"]] or [1],
          globalTid=[gtid(1, c[0]) for c in ev["calls"]] or [gtid(1, 0)],
          correlationId=list(range(1, len(ev["calls"]) + 1)) or [999], nameId=w.string("launch"))
    name = w.string("k")
    for kind, table in enumerate(("kernels", "memcpy")):
        ks = [k for k in ev["kernels"] if k[4] == kind]
        if ks:
            extra = {"demangledName": name, "shortName": name, "mangledName": name} if kind == 0 else {}
            w.add(table, start=[k[1] for k in ks], end=[k[1] + k[2] for k in ks], correlationId=[k[0] for k in ks],
                  graphNodeId=[k[3] for k in ks], deviceId=0, globalPid=gtid(1, 0), **extra)
    if ev["nodes"]:
        w.add("graph_nodes", start=[n[3] for n in ev["nodes"]], end=[n[3] + 1 for n in ev["nodes"]],
              graphNodeId=[n[0] for n in ev["nodes"]], originalGraphNodeId=[n[1] for n in ev["nodes"]],
              globalTid=[gtid(1, n[2]) for n in ev["nodes"]])
    w.close()


def brute_pairs(ev: dict, kernel_order: list[int], graph_mapping: bool) -> dict[tuple[int, int], bool]:
    """(range index, kernel index in activity order) -> via graph only."""
    pairs: dict[tuple[int, int], bool] = {}
    first_node = {}
    for n in ev["nodes"]:
        first_node.setdefault(n[0], n)
    for a, ki in enumerate(kernel_order):
        corr, _, _, node, _ = ev["kernels"][ki]
        points = []
        if 1 <= corr <= len(ev["calls"]):  # correlation ids count from 1; 0 links to no call
            points.append((ev["calls"][corr - 1], False))
        if graph_mapping and node >= 0 and node in first_node:
            n = first_node[node]
            while n[1] >= 0 and n[1] in first_node and first_node[n[1]][3] < n[3]:  # originals come first
                n = first_node[n[1]]
            points.append(((n[2], n[3]), True))
        for (thread, t), via_graph in points:
            for r, (rt, s, d) in enumerate(ev["ranges"]):
                if rt == thread and s <= t < s + d:
                    pairs[(r, a)] = pairs.get((r, a), True) and via_graph
    return pairs


def union_length(spans: list[tuple[int, int]]) -> int:
    return len({t for s, e in spans for t in range(s, e)})


@settings(max_examples=30, deadline=None)
@given(events, st.booleans(), st.integers(1, 4))
def test_correlation_and_projection_match_brute_force(ev, graph_mapping, set_anchors):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.asysrep"
        write_events(path, ev)
        report = SqliteReport(path)
        inputs = Inputs(report)
        ranges = all_ranges(Inputs(report))
        acts = ppu_activities(inputs)
        order = [i for kind in (0, 1) for i, k in enumerate(ev["kernels"]) if k[4] == kind]
        pairs = correlate(Inputs(report), ranges, acts, graph_mapping)
        got = {(int(r), int(a)): bool(g) for r, a, g in zip(pairs.range_row, pairs.activity_row, pairs.via_graph)}
        assert len(got) == len(pairs.range_row)
        want = brute_pairs(ev, order, graph_mapping)
        assert got == want
        proj = project(pairs, acts, ranges.rows)
        anchors = correlate_module.Anchors(Inputs(report), acts, graph_mapping)
        with mock.patch.object(correlate_module, "SET_ANCHORS", set_anchors), \
                mock.patch.object(correlate_module, "SET_LINKS", set_anchors):  # a few threads, ranges at a time
            sets = anchors.thread_sets(ranges["globalTid"])
            by_set = [anchors.pairs(ranges, threads) for threads in sets or [None]]
            by_thread = correlate_module.projected(anchors, ranges, acts)
        if sets is not None:  # the sets part the ranges' threads
            assert np.array_equal(np.sort(np.concatenate(sets)), np.unique(ranges["globalTid"]))
        assert {(int(r), int(a)): bool(g) for p in by_set
                for r, a, g in zip(p.range_row, p.activity_row, p.via_graph)} == want
        assert sum(len(p.range_row) for p in by_set) == len(want)
        for field in ("count", "start", "end", "active"):
            assert np.array_equal(getattr(by_thread, field), getattr(proj, field))
        for r in range(ranges.rows):
            spans = [(ev["kernels"][order[a]][1], ev["kernels"][order[a]][1] + ev["kernels"][order[a]][2])
                     for (rr, a) in want if rr == r]
            assert proj.count[r] == len(spans)
            if spans:
                assert proj.start[r] == min(s for s, _ in spans) and proj.end[r] == max(e for _, e in spans)
                assert proj.active[r] == union_length(spans)
        innermost = innermost_range_names(inputs, acts)
        for a, ki in enumerate(order):
            corr = ev["kernels"][ki][0]
            call = ev["calls"][corr - 1] if 1 <= corr <= len(ev["calls"]) else None
            enclosing = [] if call is None else [(s, -(s + d), r) for r, (rt, s, d) in enumerate(ev["ranges"])
                                                 if rt == call[0] and s <= call[1] < s + d]
            expected = ranges["name"][max(enclosing)[2]] if enclosing else -1
            assert innermost[a] == expected
        report.close()


# -- the interval helpers the correlation relies on, beyond their own tests ------------------------
def test_covered_length_by_group_when_packed_keys_would_overflow():
    big = 1 << 61
    got = intervals.covered_length_by_group(np.array([0, 0, 3, 3]), np.array([0, 5, 0, big]),
                                            np.array([10, 20, 1, big + 7]), 4)
    assert got.tolist() == [20, 0, 0, 8]


@given(st.lists(st.tuples(st.sampled_from([-5, 0, 7, 1 << 40, 3 << 56]), st.integers(0, 20)), max_size=60))
def test_group_time_order_is_a_stable_sort_by_group_then_time(rows):
    groups = np.array([g for g, _ in rows], dtype=np.int64)
    times = np.array([t for _, t in rows], dtype=np.int64)
    assert intervals.group_time_order(groups, times).tolist() == np.lexsort((times, groups)).tolist()


@pytest.mark.parametrize("n", [1 << 16, (1 << 16) + 1])  # the most groups a 16-bit radix key holds, and one more
def test_group_time_order_with_as_many_groups_as_a_radix_key_holds_and_more(n):
    groups = np.arange(n)[::-1].repeat(2)
    times = np.tile([5, 1], n)
    order = intervals.group_time_order(groups, times)
    assert np.array_equal(groups[order], np.arange(n).repeat(2)) and np.array_equal(times[order], np.tile([1, 5], n))
