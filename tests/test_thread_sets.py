"""Range attribution a set at a time: of whole threads (``correlate.Anchors.thread_sets``) or of
ranges (``Anchors.range_sets``). The sets, and the rules that use them, give what one pass gives."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import numpy as np
import pytest

import asysstats
from asysstats.analysis import correlate
from asysstats.analysis.hgtx import all_ranges
from asysstats.analysis.inputs import Inputs
from asysstats.reading.sqlite import SqliteReport
from asysstats.synth.writer import ReportWriter
from tests.conftest import NSYS_CORPUS

STARTEND = 60
SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sample.asysrep"


def gtid(tid: int) -> int:
    return (1 << 24) | tid


def three_threads(path: Path) -> None:
    """
    time         0    10   20   30   40   50   60  100
    thread 1     [A=========================================)   launches at 10, 20, 30
    thread 2     [B=========================================)   launch at 40
    thread 3     [C=========================================)   launches at 50, 60
                       [D=======)                               (10..35, thread 3: no launch inside)
    """
    w = ReportWriter(path)
    w.add("hgtx", start=[0, 0, 0, 10], end=[100, 100, 100, 35], eventType=STARTEND, text=["A", "B", "C", "D"],
          globalTid=[gtid(1), gtid(2), gtid(3), gtid(3)], domainId=0)
    starts, threads = [10, 20, 30, 40, 50, 60], [1, 1, 1, 2, 3, 3]
    w.add("runtime", start=starts, end=[s + 1 for s in starts], globalTid=[gtid(t) for t in threads],
          correlationId=list(range(1, 7)), nameId=w.string("launch"))
    name = w.string("k")
    w.add("kernels", start=[s + 5 for s in starts], end=[s + 8 for s in starts], correlationId=list(range(1, 7)),
          graphNodeId=-1, deviceId=0, globalPid=gtid(0), demangledName=name, shortName=name, mangledName=name)
    w.close()


def test_threads_are_set_by_their_anchors(tmp_path: Path):
    three_threads(tmp_path / "r.asysrep")
    inputs = Inputs(SqliteReport(tmp_path / "r.asysrep"))
    ranges = all_ranges(inputs)
    anchors = correlate.Anchors(inputs, correlate.ppu_activities(inputs))
    assert anchors.thread_sets(ranges["globalTid"]) is None  # 6 anchors: one pass
    with mock.patch.object(correlate, "SET_ANCHORS", 3):
        sets = anchors.thread_sets(ranges["globalTid"])
        assert [s.tolist() for s in sets or []] == [[gtid(1)], [gtid(2), gtid(3)]]  # 3 | 1 + 2
        names = [inputs.strings.text(int(n)) for n in ranges["name"]]
        linked = [sorted((names[r], int(a)) for r, a in zip(p.range_row, p.activity_row))
                  for p in (anchors.pairs(ranges, threads) for threads in sets)]
        assert linked == [[("A", 0), ("A", 1), ("A", 2)], [("B", 3), ("C", 4), ("C", 5)]]
    with mock.patch.object(correlate, "SET_ANCHORS", 2):  # thread 1 holds more: a set of its own
        assert [s.tolist() for s in anchors.thread_sets(ranges["globalTid"]) or []] == [[gtid(1)], [gtid(2)],
                                                                                          [gtid(3)]]


def test_ranges_are_set_by_their_links(tmp_path: Path):
    """Links A 3, B 1, C 2, D 0 (the drawing above); sets cut where the running count passes
    each multiple of ``SET_LINKS``, a thread's ranges in row order."""
    three_threads(tmp_path / "r.asysrep")
    inputs = Inputs(SqliteReport(tmp_path / "r.asysrep"))
    ranges = all_ranges(inputs)
    activities = correlate.ppu_activities(inputs)
    anchors = correlate.Anchors(inputs, activities)
    names = [inputs.strings.text(int(n)) for n in ranges["name"]]
    assert anchors.range_sets(ranges) is None
    whole = correlate.project(anchors.pairs(ranges), activities, ranges.rows)
    for links, expected in ((3, [["A"], ["B", "C", "D"]]), (1, [["A"], ["B"], ["C", "D"]]),
                            (100, [["A", "B", "C", "D"]])):
        with mock.patch.object(correlate, "SET_ANCHORS", 1), mock.patch.object(correlate, "SET_LINKS", links):
            sets = anchors.range_sets(ranges) or []
            assert [sorted(names[row] for row in rows) for rows in sets] == expected
            by_set = correlate.projected(anchors, ranges, activities)
        assert [getattr(by_set, f).tolist() for f in ("count", "start", "end", "active")] == \
            [getattr(whole, f).tolist() for f in ("count", "start", "end", "active")]
    assert whole.count[names.index("A")] == 3 and whole.active[names.index("C")] == 6  # 55..58, 65..68
    with mock.patch.object(correlate, "SET_ANCHORS", 1), mock.patch.object(correlate, "SET_LINKS", 1):
        assert same_pairs(anchors.all_pairs(ranges), anchors.pairs(ranges))


def same_pairs(one: correlate.Pairs, other: correlate.Pairs) -> bool:
    return all(np.array_equal(getattr(one, f), getattr(other, f)) for f in ("range_row", "activity_row", "via_graph"))


@pytest.mark.parametrize("links", [1, 50, 4000])
def test_pairs_by_sets_come_in_the_order_of_one_pass(links: int):
    """The bundled sample's ranges linked by sets of ranges: the same pairs, direct and graph-mapped,
    in the same order as one pass (the order that ties between equal ranges follow)."""
    inputs = Inputs(SqliteReport(SAMPLE))
    ranges = all_ranges(inputs)
    anchors = correlate.Anchors(inputs, correlate.ppu_activities(inputs))
    whole = anchors.pairs(ranges)
    with mock.patch.object(correlate, "SET_ANCHORS", 1), mock.patch.object(correlate, "SET_LINKS", links):
        assert len(anchors.range_sets(ranges) or []) > 1
        by_set = anchors.all_pairs(ranges)
    assert whole.via_graph.any() and not whole.via_graph.all()
    assert same_pairs(by_set, whole)


VARIANTS = [("hgtx_kern_sum", {}), ("hgtx_kern_sum", {"standalone": True, "no_graph_mapping": True}),
            ("hgtx_kern_sum", {"standalone": True, "range_exclude": ".*"}),
            ("hgtx_ppu_proj_sum", {}), ("hgtx_ppu_proj_trace", {}), ("hgtx_step_sum", {"range": ".*"}),
            ("ppu_op_sum", {}), ("ppu_op_trace", {}), ("ppu_op_breakdown", {}), ("moe_op_sum", {})]
REPORTS = [SAMPLE, *(NSYS_CORPUS / f"{name}.sqlite" for name in ("fuser_nvtx_2025", "memfusion", "pipit_saxpy_mpi"))]


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.stem)
def test_rules_give_the_same_rows_a_thread_at_a_time(path: Path):
    if not path.exists():
        pytest.skip(f"{path} is absent")
    rows = []
    for rule, options in VARIANTS:
        with asysstats.open(path) as report:
            whole = report.stats(rule, **options)
        with mock.patch.object(correlate, "SET_ANCHORS", 1), mock.patch.object(correlate, "SET_LINKS", 50), \
                asysstats.open(path) as report:
            by_thread = report.stats(rule, **options)
        assert by_thread.equals(whole), (rule, options)
        rows.append(whole.num_rows)
    if path == SAMPLE:  # linked, standalone kernels, projections, operators: each variant has rows to compare
        assert rows == [3980, 3948, 88, 676, 4008, 4013, 30, 3680, 31, 2]
