"""hggc_api_sum, hggc_api_trace and osrt_sum: golden output, Nsight API names, missing data,
the summaries and the key join against brute-force references."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.analysis.activity import row_index
from asysstats.synth.writer import NSYS, ReportWriter

from conftest import run_cli

SUM_HEADER = "Row#,Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name,"
TRACE_HEADER = "Row#,Start (ns),Duration (ns),Name,CorrID,Pid,Tid,Thread Name,"
PID = 100
MAIN, WORKER = (PID << 24) | 100, (PID << 24) | 101


def csv(path: Path, rule: str, command: str = "stats", *extra: str) -> list[str]:
    run = run_cli(command, "-r", rule, "--format", "csv", *extra, path)
    assert run.code == 0, run.err
    return run.out.splitlines()


def build(writer):
    launch, memcpy, sync, main, worker = writer.strings(
        ["hggcLaunchKernel", "hgMemcpyHtoDAsync_v2", "hggcStreamSynchronize", "python", "worker"])
    # main:   launch [0,10)  memcpy [20,50)  launch [60,80)  sync [90,90)
    # worker:                 launch [25,55)
    writer.add("runtime", start=[0, 20, 60, 90, 25], end=[10, 50, 80, 90, 55],
               globalTid=[MAIN, MAIN, MAIN, MAIN, WORKER], correlationId=[1, 2, 3, 4, 5],
               nameId=[launch, memcpy, launch, sync, launch])
    writer.add("threads", nameId=[main, worker], globalTid=[MAIN, WORKER])
    writer.close()
    return writer.path


def test_api_sum_golden(writer):
    # launch: 10, 20, 30 -> total 60 (tie with memcpy's 30? no: 60 > 30); memcpy 30; sync 0
    assert csv(build(writer), "hggc_api_sum") == [
        SUM_HEADER,
        '1,66.7,60,3,20,20,10,30,8,"hggcLaunchKernel",',
        '2,33.3,30,1,30,30,30,30,0,"hgMemcpyHtoDAsync_v2",',
        '3,0.0,0,1,0,0,0,0,0,"hggcStreamSynchronize",',
    ]


def test_api_trace_golden_with_thread_names(writer):
    assert csv(build(writer), "hggc_api_trace") == [
        TRACE_HEADER,
        '1,0,10,"hggcLaunchKernel",1,100,100,"python",',
        '2,20,30,"hgMemcpyHtoDAsync_v2",2,100,100,"python",',
        '3,25,30,"hggcLaunchKernel",5,100,101,"worker",',
        '4,60,20,"hggcLaunchKernel",3,100,100,"python",',
        '5,90,0,"hggcStreamSynchronize",4,100,100,"python",',
    ]


def test_filter_time_keeps_calls_entirely_inside(writer):
    # no ANALYSIS_DETAILS: the capture starts at the earliest event (0); window [15, 60]
    lines = csv(build(writer), "hggc_api_trace", "stats", "--filter-time", "15/60")
    assert [line.split(",")[1] for line in lines[1:]] == ["20", "25"]


def test_ties_in_totals_sort_by_name(writer):
    b, a = writer.strings(["bCall", "aCall"])
    writer.add("runtime", start=[0, 100], end=[40, 140], globalTid=MAIN, correlationId=[1, 2], nameId=[b, a])
    writer.close()
    assert [line.split(",")[-2] for line in csv(writer.path, "hggc_api_sum")[1:]] == ['"aCall"', '"bCall"']


def test_nsight_api_names_drop_the_version_suffix(tmp_path):
    w = ReportWriter(tmp_path / "nsys.sqlite", dialect=NSYS)
    names = w.strings(["cudaLaunchKernel_v7000", "cuMemcpyHtoD_v2", "cudaStreamIsCapturing_v10000",
                       "cudaGetDeviceProperties_v2_v12000"])
    w.add("runtime", start=[0, 10, 20, 30], end=[5, 11, 22, 33], globalTid=MAIN, correlationId=[1, 2, 3, 4],
          nameId=names)
    w.close()
    names = [line.split(",")[3] for line in csv(w.path, "hggc_api_trace")[1:]]
    assert names == ['"cudaLaunchKernel"', '"cuMemcpyHtoD_v2"', '"cudaStreamIsCapturing_v10000"',
                     '"cudaGetDeviceProperties_v2_v12000"']


def test_unnamed_thread_prints_dash(writer):
    name = writer.string("hggcLaunchKernel")
    writer.add("runtime", start=[0], end=[5], globalTid=WORKER, correlationId=[1], nameId=[name])
    writer.close()
    assert csv(writer.path, "hggc_api_trace")[1] == '1,0,5,"hggcLaunchKernel",1,100,101,"-",'


def test_osrt_sum_golden(writer):
    poll, read = writer.strings(["poll", "read"])
    writer.add("osrt", start=[0, 10, 30, 100], end=[5, 20, 60, 100], globalTid=MAIN, nameId=[poll, read, read, poll])
    writer.close()
    assert csv(writer.path, "osrt_sum") == [
        SUM_HEADER,
        '1,88.9,40,2,20,20,10,30,10,"read",',
        '2,11.1,5,2,2,2,0,5,2,"poll",',
    ]


def test_missing_tables_name_the_collection_option(writer):
    writer.add("kernels", start=[0], end=[1], deviceId=0)
    writer.close()
    for rule, option in (("hggc_api_sum", "--trace hggc"), ("hggc_api_trace", "--trace hggc"),
                         ("osrt_sum", "--trace osrt")):
        run = run_cli("stats", "-r", rule, writer.path)
        assert run.code == 2 and option in run.err and "Traceback" not in run.err


def brute_summary(values_by_name: dict[str, list[int]]) -> list[tuple]:
    """(name, total, count, avg, med, min, max, std, percent) per name, by total desc then name."""
    grand = sum(sum(v) for v in values_by_name.values())
    rows = []
    for name, values in values_by_name.items():
        v, n = sorted(values), len(values)
        total = sum(v)
        std = math.sqrt(sum((x - total / n) ** 2 for x in v) / n)
        rows.append((name, total, n, total // n, (v[(n - 1) // 2] + v[n // 2]) // 2, v[0], v[-1], std,
                     100 * total / grand if grand else None))
    return sorted(rows, key=lambda r: (-r[1], r[0]))


def assert_summary(got: list[dict], expected: list[tuple], name: str, count: str, unit: str = "ns") -> None:
    """Compare JSON rows of a summary rule with :func:`brute_summary`."""
    total = "Total Time (ns)" if unit == "ns" else f"Total ({unit})"
    assert [r[name] for r in got] == [e[0] for e in expected]
    for row, (_, tot, n, avg, med, lo, hi, std, pct) in zip(got, expected):
        assert (row[total], row[count], row[f"Avg ({unit})"], row[f"Med ({unit})"], row[f"Min ({unit})"],
                row[f"Max ({unit})"]) == (tot, n, avg, med, lo, hi)
        assert abs(row[f"StdDev ({unit})"] - std) <= 1
        if "Time (%)" in row:
            assert (row["Time (%)"] is None) == (pct is None)
            assert pct is None or abs(row["Time (%)"] - pct) <= 0.051


EVENTS = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1000), st.integers(0, 60)), max_size=25)
NAMES = ["alpha", "Beta", "beta", "gamma"]


def run_json(path: Path, rule: str, command: str = "stats") -> list[dict]:
    run = run_cli(command, "-r", rule, "--format", "json", path)
    assert run.code == 0, run.err
    return json.loads(run.out)


@settings(max_examples=40, deadline=None)
@given(EVENTS)
def test_api_and_osrt_sum_match_brute_force(events):
    with tempfile.TemporaryDirectory() as tmp:
        w = ReportWriter(Path(tmp) / "r.asysrep")
        ids = w.strings(NAMES)
        columns = dict(start=[s for _, s, _ in events], end=[s + d for _, s, d in events], globalTid=MAIN,
                       nameId=[int(ids[k]) for k, _, _ in events])
        w.add("runtime", correlationId=list(range(len(events))), **columns)
        w.add("osrt", **columns)
        w.close()
        expected: dict[str, list[int]] = {}
        for k, _, d in events:
            expected.setdefault(NAMES[k], []).append(d)
        for rule in ("hggc_api_sum", "osrt_sum"):
            assert_summary(run_json(w.path, rule), brute_summary(expected), "Name", "Num Calls")


KEYS = st.lists(st.tuples(st.integers(0, 3), st.integers(-2, 2)), max_size=15)


@settings(max_examples=60, deadline=None)
@given(KEYS, KEYS)
def test_row_index_matches_brute_force(table, queries):
    t = np.array(table, dtype=np.int64).reshape(-1, 2)
    q = np.array(queries, dtype=np.int64).reshape(-1, 2)
    first = {key: i for i, key in reversed(list(enumerate(table)))}
    assert row_index([t[:, 0], t[:, 1]], [q[:, 0], q[:, 1]]).tolist() == [first.get(key, -1) for key in queries]
    first_a = {a: i for i, (a, _) in reversed(list(enumerate(table)))}
    assert row_index([t[:, 0]], [q[:, 0]]).tolist() == [first_a.get(a, -1) for a, _ in queries]
