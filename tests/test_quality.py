"""Data-quality checks (``asys stats --check``) and the default exclusion of suspect events."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.analysis.inputs import Inputs, Settings
from asysstats.analysis.nesting import nesting
from asysstats.core.tables import EventTable
from asysstats.reading.sqlite import SqliteReport
from asysstats.rulebook.quality import nesting_breaks, report_check

from conftest import corpus_params, fingerprint, run_cli

PID = 1 << 24
TID = PID | 7
HEADER = "Row#,Check,Table,Count,Example,"
KERN_HEADER = "Row#,Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name,"
KEEP = "(use --keep-suspect-events to keep them)"


def build_dirty(writer):
    """One report failing every check once (capture [0, 1000) by ANALYSIS_DETAILS).

    kernels (device 0 unless noted; corr = correlationId; calls on thread 7):
      1  [100, 200)    corr 1  call [90, 95)             clean
      2  [300, 250)    corr 2                             end before start
      3  [-600, 500)   corr 3  call [-700, -690)          longer than capture (1100 ns); host calls start at -700
      4  [400, 450)    corr 9  no call                    no launch call
      5  [500, 550)    corr 5  call [520, 530)            starts 20 ns before its launch call
      6  [1200, 1250)  corr 6  call [900, 910), device 1  ends 250 ns after the capture (host ends by 910)
      7  [600, 650)    corr 0                             caused by no call (a migration): clean
    runtime row 6: cudaLaunchKernel corr 4 with no activity; corr 7 failed; corr 8 made a graph node.
    hgtx thread 7:  A [10 ......... 100)          thread 8:  D [5 ..... 40)
                      B [20..50)  C [60 ....... 150)         E [6..30)        C crosses A
    memory: alloc 4096 @100, free 4096 @200, free 8192 @300 (never allocated), free 4096 @400 (again)
    """
    k, launch, memcpy, malloc = writer.strings(["k", "cudaLaunchKernel", "cudaMemcpy", "cudaMalloc"])
    writer.add("analysis", duration=1000, startTime=0, stopTime=1000)
    writer.add("kernels", start=[100, 300, -600, 400, 500, 1200, 600], end=[200, 250, 500, 450, 550, 1250, 650],
               deviceId=[0, 0, 0, 0, 0, 1, 0], correlationId=[1, 2, 3, 9, 5, 6, 0], globalPid=PID,
               demangledName=k, shortName=k, mangledName=k)
    writer.add("runtime", start=[90, 280, -700, 520, 900, 700, 710, 720, 730],
               end=[95, 285, -690, 530, 910, 705, 715, 725, 735], correlationId=[1, 2, 3, 5, 6, 4, 7, 8, 10],
               globalTid=TID, nameId=[launch] * 6 + [memcpy, launch, malloc], returnValue=[0] * 6 + [1, 0, 0])
    writer.add("graph_nodes", start=[721], end=[722], globalTid=TID, correlationId=[8], graphNodeId=[1])
    writer.add("hgtx", start=[10, 20, 60, 70, 5, 6], end=[100, 50, 150, None, 40, 30],
               eventType=[59, 59, 59, 34, 59, 59], globalTid=[TID, TID, TID, TID, PID | 8, PID | 8],
               text=["A", "B", "C", "mark", "D", "E"])
    writer.add("memory_usage", start=[100, 200, 300, 400], globalPid=PID, deviceId=0, address=[4096, 4096, 8192, 4096],
               bytes=64, memoryOperationType=[0, 1, 1, 1])
    writer.close()
    return writer.path


def build_clean(writer):
    """Every table of the dirty report, without a problem: kernel rows 1 and 7, calls 1 and 10,
    nested ranges, an allocation and its free."""
    k, launch, malloc = writer.strings(["k", "cudaLaunchKernel", "cudaMalloc"])
    writer.add("analysis", duration=1000, startTime=0, stopTime=1000)
    writer.add("kernels", start=[100, 600], end=[200, 650], deviceId=0, correlationId=[1, 0], globalPid=PID,
               demangledName=k, shortName=k, mangledName=k)
    writer.add("runtime", start=[90, 730], end=[95, 735], correlationId=[1, 10], globalTid=TID,
               nameId=[launch, malloc], returnValue=0)
    writer.add("hgtx", start=[10, 20, 70], end=[100, 50, None], eventType=[59, 59, 34], globalTid=TID,
               text=["A", "B", "mark"])
    writer.add("memory_usage", start=[100, 200], globalPid=PID, deviceId=0, address=4096, bytes=64,
               memoryOperationType=[0, 1])
    writer.close()
    return writer.path


def test_every_check_golden_csv(writer):
    path = build_dirty(writer)
    before = fingerprint(path)
    run = run_cli("stats", "--check", "--format", "csv", path)
    assert (run.code, run.err) == (0, "")
    assert run.out.splitlines() == [
        HEADER,
        '1,"end before start","kernels",1,"row 2: start 300, end 250",',
        '2,"longer than capture","kernels",1,"row 3: 1100 ns (capture 1000 ns)",',
        '3,"no launch call","kernels",1,"row 4: device 0, correlation 9, start 400",',
        '4,"launch without activity","runtime",1,"row 6: cudaLaunchKernel at 700 (correlation 4)",',
        '5,"starts before launch","kernels",1,"row 5: device 0 starts 20 ns before its launch call",',
        '6,"outside capture","kernels",1,"row 6: device 1 ends 250 ns after the capture",',
        '7,"broken nesting","hgtx",1,"range 3 \'C\' [60, 150) on thread 7 is not inside range 1 \'A\' [10, 100)",',
        '8,"unmatched free","memory_usage",2,"row 3: free of address 8192 on device 0 (pid 1) at 300; '
        'row 4: free of address 4096 on device 0 (pid 1) at 400",',
    ]
    assert fingerprint(path) == before


def test_clean_report_reports_nothing(writer):
    run = run_cli("stats", "--check", "--format", "csv", build_clean(writer))
    assert (run.code, run.out, run.err) == (0, HEADER + "\n", "")


def test_check_as_json(writer):
    run = run_cli("stats", "--check", "--format", "json", build_dirty(writer))
    assert run.code == 0, run.err
    rows = json.loads(run.out)
    assert [(r["Check"], r["Table"], r["Count"]) for r in rows][-2:] == [("broken nesting", "hgtx", 1),
                                                                         ("unmatched free", "memory_usage", 2)]
    assert rows[0] == {"Check": "end before start", "Table": "kernels", "Count": 1,
                       "Example": "row 2: start 300, end 250"}


def test_check_then_rules(writer):
    """--check comes first, then the -r rules (whose suspect-event notes follow the run)."""
    run = run_cli("stats", "--check", "-r", "hggc_ppu_kern_sum", "--format", "csv", build_dirty(writer))
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    assert lines[0] == HEADER and lines[9] == KERN_HEADER and len(lines) == 11
    assert run.err.count("note:") == 2


def test_activity_without_traced_calls_is_not_reported(writer):
    """Without API calls the launch checks do not run."""
    k, launch = writer.strings(["k", "cudaLaunchKernel"])
    writer.add("kernels", start=[0], end=[5], deviceId=0, correlationId=[3], globalPid=PID, demangledName=k)
    writer.close()
    assert run_cli("stats", "--check", "--format", "csv", writer.path).out == HEADER + "\n"


def test_launch_without_any_activity_table_is_not_reported(writer):
    launch, = writer.strings(["cudaLaunchKernel"])
    writer.add("runtime", start=[0], end=[5], correlationId=[3], globalTid=TID, nameId=[launch])
    writer.close()
    assert run_cli("stats", "--check", "--format", "csv", writer.path).out == HEADER + "\n"


def test_without_analysis_details_only_end_before_start(writer):
    """Without ANALYSIS_DETAILS the capture is the span of the events: nothing is longer or outside."""
    k, = writer.strings(["k"])
    writer.add("kernels", start=[0, 10, 5000], end=[10000, 5, 6000], deviceId=[0, 0, 1], demangledName=k)
    writer.close()
    run = run_cli("stats", "--check", "--format", "csv", writer.path)
    assert run.out.splitlines()[1:] == ['1,"end before start","kernels",1,"row 2: start 10, end 5",']


# -- the default exclusion of suspect events ------------------------------------------------
def test_suspect_events_are_excluded_with_a_note(writer):
    path = build_dirty(writer)
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "csv", path)
    assert run.code == 0
    # kernels 1, 4, 5, 6, 7: 100 + 50 + 50 + 50 + 50
    assert run.out.splitlines()[1] == '1,100.0,300,5,60,50,50,100,20,"k",'
    assert run.err.splitlines() == [
        f"note: report.asysrep: 1 kernels rows with end < start excluded {KEEP}",
        f"note: report.asysrep: 1 kernels rows longer than the capture (1000 ns) excluded {KEEP}",
    ]


def test_keep_suspect_events(writer):
    path = build_dirty(writer)
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "csv", "--keep-suspect-events", path)
    assert (run.code, run.err) == (0, "")
    # adds kernel 2 (-50 ns) and kernel 3 (1100 ns)
    assert run.out.splitlines()[1] == '1,100.0,1350,7,192,50,-50,1100,372,"k",'


def test_a_note_is_printed_once_per_run(writer):
    path = build_dirty(writer)
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum,hggc_ppu_kern_gb_sum,hggc_ppu_trace", "--format", "csv", path)
    assert run.code == 0, run.err
    assert len(run.err.splitlines()) == 2


def test_marks_and_open_ranges_are_not_suspect(writer):
    """HGTX marks and metric samples have no end: not 'end before start'."""
    writer.add("hgtx", start=[10, 20], end=[None, 30], eventType=[34, 59], globalTid=TID, text=["m", "r"])
    writer.add("metrics", start=[5, 6], deviceId=0, metricId=1, value=[1.0, 2.0])
    writer.close()
    assert run_cli("stats", "--check", "--format", "csv", writer.path).out == HEADER + "\n"
    assert run_cli("stats", "-r", "hgtx_sum", "--format", "csv", writer.path).err == ""


# -- properties against brute force ---------------------------------------------------------
def laminar(ranges: list[tuple[int, int, int]]) -> bool:
    """Brute force: no two ranges of one thread partially overlap."""
    return not any(g1 == g2 and s1 < s2 < e1 < e2 for g1, s1, e1 in ranges for g2, s2, e2 in ranges)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 20), st.integers(0, 8)), max_size=12))
def test_nesting_breaks_exactly_when_not_laminar(raw):
    ranges = [(g, s, s + d) for g, s, d in raw]
    g, s, e = (np.array([r[i] for r in ranges], dtype=np.int64) for i in range(3))
    ids = np.arange(1, len(ranges) + 1, dtype=np.int64)
    table = EventTable({"rangeId": ids, "start": s, "end": e, "pushpop": np.ones(len(ranges), np.int64),
                        **nesting(g, s, e, np.ones(len(ranges), bool), ids)})
    broken, _ = nesting_breaks(table)
    assert (not broken.any()) == laminar(ranges)


def brute_unmatched(events: list[tuple[int, int, int]]) -> int:
    """Frees whose latest earlier event (time, then row) on their address is not an allocation."""
    count = 0
    for i, (t, address, op) in enumerate(events):
        if op != 1:
            continue
        earlier = [(t2, j, op2) for j, (t2, a2, op2) in enumerate(events) if a2 == address and (t2, j) < (t, i)]
        count += not earlier or max(earlier)[2] != 0
    return count


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(-50, 150), st.integers(-20, 120)), min_size=1, max_size=10),
       st.lists(st.tuples(st.integers(0, 20), st.integers(0, 2), st.integers(0, 1)), max_size=10))
def test_counts_match_brute_force(tmp_path_factory, kernels, memory):
    from asysstats.synth.writer import ReportWriter

    path = tmp_path_factory.mktemp("q") / "r.asysrep"
    writer = ReportWriter(path)
    k, = writer.strings(["k"])
    writer.add("analysis", duration=100, startTime=0, stopTime=100)
    writer.add("kernels", start=[s for s, _ in kernels], end=[e for _, e in kernels], deviceId=0, demangledName=k)
    if memory:
        writer.add("memory_usage", start=[m[0] for m in memory], address=[m[1] for m in memory], globalPid=PID,
                   deviceId=0, memoryOperationType=[m[2] for m in memory])
    writer.close()
    report = SqliteReport(path, cache=False)
    frame = report_check(Inputs(report), {})
    counts = {(c, t): n for c, t, n in zip(frame["Check"], frame["Table"], frame["Count"])}
    backwards = sum(e < s for s, e in kernels)
    longer = sum(e - s > 100 for s, e in kernels)
    assert counts.get(("end before start", "kernels"), 0) == backwards
    assert counts.get(("longer than capture", "kernels"), 0) == longer
    assert counts.get(("unmatched free", "memory_usage"), 0) == brute_unmatched(memory)
    kept = Inputs(report, Settings()).table("kernels", ("start", "end"))
    assert sorted(zip(kept["start"].tolist(), kept["end"].tolist())) == \
        sorted((s, e) for s, e in kernels if s <= e <= s + 100)
    everything = Inputs(report, Settings(keep_suspect_events=True))
    assert everything.table("kernels", ("start",)).rows == len(kernels) and not everything.notes
    report.close()


# -- the corpus -----------------------------------------------------------------------------
@pytest.mark.parametrize("path", corpus_params())
def test_corpus_check_is_clean(path):
    """Every corpus export passes every check (see docs/quality.md)."""
    before = fingerprint(path)
    run = run_cli("stats", "--check", "--format", "json", path)
    assert (run.code, run.err) == (0, "")
    assert json.loads(run.out) == []
    assert fingerprint(path) == before
