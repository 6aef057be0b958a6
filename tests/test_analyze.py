"""asys analyze: ppu_gaps and ppu_time_util, golden output, options, brute force."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_hggc_api import csv, run_json

from asysstats.synth.writer import ReportWriter

from conftest import run_cli

GAP_HEADER = "Row#,Duration (ns),Start (ns),PID,Device ID,"
UTIL_HEADER = "Row#,In-Use (%),Duration (ns),Start (ns),PID,Device ID,"
MS = 1_000_000


def build_gaps(writer):
    # pid 100, device 0: kernel [0,1) [2,3) [5,5) (zero length: splits [3,10))  memcpy [10,11)  memset [11,11)  (ms)
    # pid 100, device 1: kernel [0,4) [1,2) (nested) [6,7)
    # pid 200, device 0: kernel [0,1) [8,9)
    p100, p200 = 100 << 24, 200 << 24
    writer.add("kernels", start=[0, 2 * MS, 5 * MS, 0, 1 * MS, 6 * MS, 0, 8 * MS],
               end=[1 * MS, 3 * MS, 5 * MS, 4 * MS, 2 * MS, 7 * MS, 1 * MS, 9 * MS],
               deviceId=[0, 0, 0, 1, 1, 1, 0, 0], globalPid=[p100] * 6 + [p200] * 2)
    writer.add("memcpy", start=[10 * MS], end=[11 * MS], deviceId=0, globalPid=p100)
    writer.add("memset", start=[11 * MS], end=[11 * MS], deviceId=0, globalPid=p100)
    writer.close()
    return writer.path


def test_gaps_golden(writer):
    assert csv(build_gaps(writer), "ppu_gaps:gap=0", "analyze") == [
        GAP_HEADER,
        "1,7000000,1000000,200,0,",
        "2,5000000,5000000,100,0,",
        "3,2000000,3000000,100,0,",
        "4,2000000,4000000,100,1,",
        "5,1000000,1000000,100,0,",
    ]


@pytest.mark.parametrize("option, count", [("gap=1", 4), ("gap=2", 2), ("gap=7", 0), ("gap=0:rows=1", 1), ("", 0)])
def test_gaps_threshold_is_strict_and_rows_limit(writer, option, count):
    rule = f"ppu_gaps:{option}" if option else "ppu_gaps"
    assert len(csv(build_gaps(writer), rule, "analyze")) == 1 + count


def build_util(writer, analysis: bool = False):
    # pid 100, device 0: [0,10) [30,40) [40,100)     chunks of 10: [10,30) idle
    # pid 200, device 0: [0,5) [95,100)              chunks of 10: 50%, 0% x 8, 50%
    # pid 300, device 1: [0,2) [10,13) [20,100)      chunks of 10: 20%, 30%, then busy
    writer.add("kernels", start=[0, 30, 40, 0, 95, 0, 10, 20], end=[10, 40, 100, 5, 100, 2, 13, 100],
               deviceId=[0, 0, 0, 0, 0, 1, 1, 1], globalPid=[100 << 24] * 3 + [200 << 24] * 2 + [300 << 24] * 3)
    if analysis:
        writer.add("analysis", duration=200, startTime=0, stopTime=200)
    writer.close()
    return writer.path


def test_time_util_golden(writer):
    assert csv(build_util(writer), "ppu_time_util:chunks=10", "analyze") == [
        UTIL_HEADER,
        "1,0.0,20,10,100,0,",
        "2,0.0,80,10,200,0,",
        "3,25.0,20,0,300,1,",
    ]


def test_time_util_options(writer):
    path = build_util(writer)
    # 4 chunks of 25: pid 200 is under 50% everywhere (20, 0, 0, 20%): one merged row of 10%
    assert csv(path, "ppu_time_util:chunks=4", "analyze")[1:] == [
        "1,10.0,100,0,200,0,", "2,40.0,25,0,100,0,", "3,40.0,25,0,300,1,"]
    assert csv(path, "ppu_time_util:chunks=10:threshold=21", "analyze")[1:] == [
        "1,0.0,20,10,100,0,", "2,0.0,80,10,200,0,", "3,20.0,10,0,300,1,"]
    assert csv(path, "ppu_time_util:chunks=10:merge-process-id", "analyze")[1:] == [
        '1,0.0,20,10,"-",0,', '2,25.0,20,0,"-",1,']


def test_time_util_full_range_uses_the_analysis_range_or_the_filter(writer):
    path = build_util(writer, analysis=True)
    # [0, 200) in chunks of 20: both devices idle over [100, 200); device 1 at 25% in [0, 20)
    lines = csv(path, "ppu_time_util:chunks=10:range-mode=full:merge-process-id", "analyze")
    assert lines[1:] == ['1,0.0,100,100,"-",0,', '2,0.0,100,100,"-",1,', '3,25.0,20,0,"-",1,']
    lines = csv(path, "ppu_time_util:chunks=10:range-mode=full", "analyze", "--filter-time", "0/100")
    assert lines[1:] == ["1,0.0,20,10,100,0,", "2,0.0,80,10,200,0,", "3,25.0,20,0,300,1,"]


def test_missing_activity_names_the_collection_option(writer):
    writer.add("runtime", start=[0], end=[1], globalTid=1, nameId=[writer.string("x")])
    writer.close()
    for rule in ("ppu_gaps", "ppu_time_util"):
        run = run_cli("analyze", "-r", rule, writer.path)
        assert run.code == 2 and "(collect with --trace hggc)" in run.err and "Traceback" not in run.err


def test_analyze_runs_both_rules_by_default(writer):
    run = run_cli("analyze", "--format", "csv", build_gaps(writer))
    assert run.code == 0 and GAP_HEADER in run.out and UTIL_HEADER in run.out


ACTIVITY = st.lists(st.tuples(st.integers(1, 2), st.integers(0, 1), st.integers(0, 150), st.integers(0, 40)),
                    min_size=1, max_size=20)


def write_activities(tmp: str, events) -> Path:
    w = ReportWriter(Path(tmp) / "r.asysrep")
    w.add("kernels", start=[s for _, _, s, _ in events], end=[s + d for *_, s, d in events],
          deviceId=[d for _, d, _, _ in events], globalPid=[p << 24 for p, *_ in events])
    w.close()
    return w.path


def points_by_group(events) -> dict[tuple[int, int], set[int]]:
    """Instants of the zero-length activities, per (pid, device)."""
    points: dict[tuple[int, int], set[int]] = {}
    for pid, dev, start, duration in events:
        if not duration:
            points.setdefault((pid, dev), set()).add(start)
    return points


def busy_by_group(events) -> dict[tuple[int, int], set[int]]:
    """Nanoseconds covered by some activity, per (pid, device)."""
    busy: dict[tuple[int, int], set[int]] = {}
    for pid, dev, start, duration in events:
        if duration:
            busy.setdefault((pid, dev), set()).update(range(start, start + duration))
    return busy


@settings(max_examples=50, deadline=None)
@given(ACTIVITY)
def test_gaps_match_brute_force(events):
    expected = []
    busy, points = busy_by_group(events), points_by_group(events)
    for group in set(busy) | set(points):
        # idle nanoseconds between the first and the last activity, in runs cut at every zero-length activity
        ends = [t + 1 for t in busy.get(group, ())] + list(points.get(group, ()))
        starts = list(busy.get(group, ())) + list(points.get(group, ()))
        idle = sorted(set(range(min(starts), max(ends))) - busy.get(group, set()))
        runs: list[list[int]] = []
        for t in idle:
            if runs and runs[-1][-1] == t - 1 and t not in points.get(group, set()):
                runs[-1].append(t)
            else:
                runs.append([t])
        expected += [(len(run), run[0], *group) for run in runs]
    expected.sort(key=lambda r: (-r[0], r[1], r[2], r[3]))
    with tempfile.TemporaryDirectory() as tmp:
        got = run_json(write_activities(tmp, events), "ppu_gaps:gap=0:rows=1000", "analyze")
    assert [(r["Duration (ns)"], r["Start (ns)"], r["PID"], r["Device ID"]) for r in got] == expected


@settings(max_examples=50, deadline=None)
@given(ACTIVITY, st.integers(1, 12), st.integers(0, 100))
def test_time_util_matches_brute_force(events, chunks, threshold):
    expected = []
    for (pid, dev), times in busy_by_group(events).items():
        lo, hi = min(times), max(times) + 1
        edges = [lo + (hi - lo) * i // chunks for i in range(chunks + 1)]
        run: list[tuple[int, int, int]] = []
        for a, b in zip(edges, edges[1:]):
            busy = sum(1 for t in range(a, b) if t in times)
            if b > a and busy * 100 < threshold * (b - a):
                run.append((a, busy, b - a))
                continue
            if run:
                expected.append((run[0][0], sum(r[1] for r in run), sum(r[2] for r in run), pid, dev))
            run = []
        if run:
            expected.append((run[0][0], sum(r[1] for r in run), sum(r[2] for r in run), pid, dev))
    expected.sort(key=lambda r: (r[1] / r[2], r[0], r[3], r[4]))
    with tempfile.TemporaryDirectory() as tmp:
        got = run_json(write_activities(tmp, events), f"ppu_time_util:rows=1000:chunks={chunks}:threshold={threshold}",
                       "analyze")
    assert [(r["Start (ns)"], r["Duration (ns)"], r["PID"], r["Device ID"]) for r in got] == [
        (s, length, pid, dev) for s, _, length, pid, dev in expected]
    for row, (_, busy, length, _, _) in zip(got, expected):
        assert abs(row["In-Use (%)"] - 100 * busy / length) <= 0.051
