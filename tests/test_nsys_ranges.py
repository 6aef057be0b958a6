"""NVIDIA's NVTX reports and CUDA summary (rulebook/nsys_ranges.py): ``nvtx_kern_sum``,
``cuda_api_gpu_sum``, ``nvtx_gpu_proj_sum`` and ``nvtx_gpu_proj_trace`` in NVIDIA's CSV on a
hand-made Nsight export, against brute force, and against Nsight-style SQL on the corpus."""

from __future__ import annotations

import csv
import io
import sqlite3
import statistics
import sys
from pathlib import Path

import pytest
from conftest import corpus_params, run_cli
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from test_nsys_corpus import STATISTICS_SQL, in_order

from asysstats.reading.schema import NSYS
from asysstats.synth.writer import ReportWriter

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from nsys_sql import nvtx_gpu_proj_sum_rows, nvtx_kern_sum_rows  # noqa: E402  (bench/ holds the SQL)

PID = 1000
T1, T2 = (PID << 24) | 1, (PID << 24) | 2


def build(path):
    """Nested push/pop and start/end ranges, kernels launched inside and outside them.

    thread 1  push/pop step [0,50) > fwd [10,30) > fwd [12,19);  start/end io [20,40)
    thread 2  push/pop side [60,100)
    launches  T1: 5 (k1), 15 (k2), 25 (k3), 45 (k5), 95 (k6, in no range);  T2: 70 (k4);  T1 sync [80,90)
    kernels   k1 add [100,150)  k2 mul [200,230)  k3 add [300,390)  k4 add [400,420)  k5 mul [500,560)
              k6 add [700,710)
    memcpy    HtoD [600,640), launched at 45 inside step (correlation 7)

    k1 is in step; k2 in step, fwd, fwd; k3 in step, fwd (the outer), io; k5 in step; k4 in side.
    """
    writer = ReportWriter(path, NSYS)
    add, mul = writer.strings(["add(int*, int*)", "mul(int*, int*)"])
    short_add, short_mul = writer.strings(["add", "mul"])
    mangled_add, mangled_mul = writer.strings(["_Z3addPiS_", "_Z3mulPiS_"])
    writer.add("kernels", start=[100, 200, 300, 400, 500, 700], end=[150, 230, 390, 420, 560, 710], deviceId=0,
               demangledName=[add, mul, add, add, mul, add], shortName=[short_add, short_mul, short_add, short_add,
                                                                         short_mul, short_add],
               mangledName=[mangled_add, mangled_mul, mangled_add, mangled_add, mangled_mul, mangled_add],
               correlationId=[1, 2, 3, 4, 5, 6], globalPid=PID << 24)
    launch, copy, sync = writer.strings(["cudaLaunchKernel_v7000", "cudaMemcpyAsync_v3020", "cudaDeviceSynchronize"])
    writer.add("runtime", start=[5, 15, 25, 70, 45, 95, 46, 80], end=[8, 18, 28, 75, 48, 97, 49, 90],
               globalTid=[T1, T1, T1, T2, T1, T1, T1, T1],
               nameId=[launch, launch, launch, launch, launch, launch, copy, sync], correlationId=[1, 2, 3, 4, 5, 6, 7, 8])
    writer.add("memcpy", start=[600], end=[640], deviceId=0, bytes=[1000], copyKind=1, correlationId=[7],
               globalPid=PID << 24)
    writer.add("hgtx", start=[0, 10, 12, 20, 60], end=[50, 30, 19, 40, 100], eventType=[59, 59, 59, 60, 59],
               text=["step", "fwd", "fwd", "io", "side"], globalTid=[T1, T1, T1, T1, T2])
    writer.close()
    return writer.path


GOLDEN = {
    "nvtx_kern_sum": [
        "NVTX Range,Style,PID,TID,NVTX Inst,Kern Inst,Total Time (ns),Avg (ns),Med (ns),Min (ns),Max (ns),"
        "StdDev (ns),Kernel Name",
        ':fwd,PushPop,1000,1,1,1,90,90.0,90.0,90,90,0.0,"add(int*, int*)"',
        ':fwd,PushPop,1000,1,2,1,30,30.0,30.0,30,30,0.0,"mul(int*, int*)"',  # k2 once, in both fwd ranges
        ':io,StartEnd,1000,1,1,1,90,90.0,90.0,90,90,0.0,"add(int*, int*)"',
        ':side,PushPop,1000,2,1,1,20,20.0,20.0,20,20,0.0,"add(int*, int*)"',
        ':step,PushPop,1000,1,1,2,140,70.0,70.0,50,90,28.3,"add(int*, int*)"',  # sqrt(800): sample deviation
        ':step,PushPop,1000,1,1,2,90,45.0,45.0,30,60,21.2,"mul(int*, int*)"',
    ],
    "cuda_api_gpu_sum": [
        "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Category,Operation",
        '51.2,170,4,42.5,35.0,10,90,35.9,CUDA_KERNEL,"add(int*, int*)"',  # of 332 ns in all
        '27.1,90,2,45.0,45.0,30,60,21.2,CUDA_KERNEL,"mul(int*, int*)"',
        "12.0,40,1,40.0,40.0,40,40,0.0,MEMORY_OPER,[CUDA memcpy Host-to-Device]",
        "5.7,19,6,3.2,3.0,2,5,1.0,CUDA_API,cudaLaunchKernel",  # without _v7000, as cuda_api_sum
        "3.0,10,1,10.0,10.0,10,10,0.0,CUDA_API,cudaDeviceSynchronize",
        "0.9,3,1,3.0,3.0,3,3,0.0,CUDA_API,cudaMemcpyAsync",
    ],
    "nvtx_gpu_proj_sum": [
        "Range,Style,Total Proj Time (ns),Total Range Time (ns),Range Instances,Proj Avg (ns),Proj Med (ns),"
        "Proj Min (ns),Proj Max (ns),Proj StdDev (ns),Total GPU Ops,Avg GPU Ops,Avg Range Lvl,Avg Num Child",
        ":step,PushPop,540,50,1,540.0,540.0,540,540,0.0,5,5.0,0.0,1.0",  # k1 start 100 to the memcpy's end 640
        ":fwd,PushPop,220,27,2,110.0,110.0,30,190,113.1,3,1.5,1.5,0.5",
        ":io,StartEnd,90,20,1,90.0,90.0,90,90,0.0,1,1.0,0.0,0.0",
        ":side,PushPop,20,40,1,20.0,20.0,20,20,0.0,1,1.0,0.0,0.0",
    ],
    "nvtx_gpu_proj_trace": [
        "Name,Projected Start (ns),Projected Duration (ns),Orig Start (ns),Orig Duration (ns),Style,PID,TID,"
        "NumGPUOps,Lvl,NumChild,RangeId,ParentId,RangeStack",
        "step,100,540,0,50,PushPop,1000,1,5,0,1,1,,:1",
        "fwd,200,190,10,20,PushPop,1000,1,2,1,1,2,1,:1:2",
        "fwd,200,30,12,7,PushPop,1000,1,1,2,0,3,2,:1:2:3",
        "io,300,90,20,20,StartEnd,1000,1,1,0,0,4,,:4",
        "side,400,20,60,40,PushPop,1000,2,1,0,0,5,,:5",
    ],
}


@pytest.mark.parametrize("rule", list(GOLDEN))
def test_golden_csv(tmp_path, rule):
    run = run_cli("stats", "-r", rule, "--format", "csv", build(tmp_path / "report.sqlite"))
    assert run.code == 0, run.err
    assert run.out.splitlines() == GOLDEN[rule]


def test_nvtx_name_prefixes_the_innermost_range(tmp_path):
    """k3's call (25) lies in step, fwd [10,30) and io [20,40): io starts latest; k6's call in no range."""
    run = run_cli("stats", "-r", "cuda_api_gpu_sum:nvtx-name", "--format", "csv", build(tmp_path / "report.sqlite"))
    kernels = [line.rsplit(",", 1)[1] if '"' not in line else line.split(',"')[1].rstrip('"')
               for line in run.out.splitlines()[1:] if "CUDA_KERNEL" in line]
    assert kernels == ["io:add(int*, int*)", "step:mul(int*, int*)", "step:add(int*, int*)", "fwd:mul(int*, int*)",
                       "side:add(int*, int*)", "add(int*, int*)"]


@pytest.mark.parametrize("rule, option, name", [("nvtx_kern_sum", "base", "add"), ("nvtx_kern_sum", "mangled", "_Z3addPiS_"),
                                                ("cuda_api_gpu_sum", "base", "add")])
def test_name_options(tmp_path, rule, option, name):
    run = run_cli("stats", "-r", f"{rule}:{option}", "--format", "csv", build(tmp_path / "report.sqlite"))
    assert run.code == 0, run.err
    assert run.out.splitlines()[1].rsplit(",", 1)[1] == name


@pytest.mark.parametrize("alias, rule", [("nvtxkernsum", "nvtx_kern_sum"), ("apigpusum", "cuda_api_gpu_sum")])
def test_nsys_2022_names_are_aliases(tmp_path, alias, rule):
    run = run_cli("stats", "-r", alias, "--format", "csv", build(tmp_path / "report.sqlite"))
    assert run.out.splitlines() == GOLDEN[rule]


RANGES = st.lists(st.tuples(st.sampled_from(["a", "b"]), st.just(60), st.sampled_from([T1, T2]),
                            st.integers(0, 200), st.integers(1, 120)), min_size=1, max_size=8)  # start/end: any overlap
KERNELS = st.lists(st.tuples(st.sampled_from(["k0", "k1"]), st.sampled_from([T1, T2]), st.integers(0, 330),
                             st.integers(0, 400), st.integers(1, 60)), min_size=1, max_size=12)


def stats_of(values: list[int]) -> tuple[float, ...]:
    """(total, count, average, median, min, max, sample deviation), exact: the printed ones are
    within 0.05 of them (one decimal)."""
    deviation = statistics.stdev(values) if len(values) > 1 else 0.0
    return (sum(values), len(values), statistics.mean(values), statistics.median(values), min(values), max(values),
            deviation)


def printed(text: str, key_columns: tuple[str, ...], first: str) -> dict[tuple[str, ...], tuple[float, ...]]:
    rows = list(csv.DictReader(io.StringIO(text)))
    names = list(rows[0]) if rows else []
    at = names.index(first) if rows else 0
    return {tuple(row[c] for c in key_columns): tuple(float(row[c]) for c in names[at:at + 7]) for row in rows}


def near(ours: dict, expected: dict) -> bool:
    return ours.keys() == expected.keys() and all(
        all(abs(a - b) <= 0.051 for a, b in zip(ours[key], expected[key])) for key in ours)


@settings(max_examples=15, deadline=None, phases=[Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(RANGES, KERNELS)
def test_range_reports_against_brute_force(tmp_path_factory, ranges, kernels):
    """Per kernel: every range on its launching thread that holds its launch start (start <= call < end).
    nvtx_kern_sum: a group's kernels each once; nvtx_gpu_proj_sum: a range's first start to last end."""
    path = tmp_path_factory.mktemp("ranges") / "report.sqlite"
    writer = ReportWriter(path, NSYS)
    name_ids = dict(zip(["k0", "k1"], writer.strings(["k0", "k1"])))
    writer.add("hgtx", start=[r[3] for r in ranges], end=[r[3] + r[4] for r in ranges], eventType=[r[1] for r in ranges],
               text=[r[0] for r in ranges], globalTid=[r[2] for r in ranges])
    writer.add("runtime", start=[k[2] for k in kernels], end=[k[2] + 1 for k in kernels],
               globalTid=[k[1] for k in kernels], nameId=writer.string("cudaLaunchKernel"),
               correlationId=list(range(1, len(kernels) + 1)))
    writer.add("kernels", start=[k[3] for k in kernels], end=[k[3] + k[4] for k in kernels], deviceId=0,
               demangledName=[name_ids[k[0]] for k in kernels], shortName=[name_ids[k[0]] for k in kernels],
               correlationId=list(range(1, len(kernels) + 1)), globalPid=PID << 24)
    writer.close()
    holding = [[i for i, r in enumerate(ranges) if r[2] == k[1] and r[3] <= k[2] < r[3] + r[4]] for k in kernels]
    style = {59: "PushPop", 60: "StartEnd"}
    by_group: dict[tuple[str, ...], set[int]] = {}
    for kernel, found in enumerate(holding):
        for r in found:
            key = (f":{ranges[r][0]}", style[ranges[r][1]], str(ranges[r][2] & 0xFFFFFF), kernels[kernel][0])
            by_group.setdefault(key, set()).add(kernel)
    expected = {key: stats_of([kernels[k][4] for k in sorted(members)]) for key, members in by_group.items()}
    run = run_cli("stats", "-r", "nvtx_kern_sum", "--format", "csv", path)
    assert run.code == 0, run.err
    assert near(printed(run.out, ("NVTX Range", "Style", "TID", "Kernel Name"), "Kern Inst"),
                {key: (value[1], value[0]) + value[2:] for key, value in expected.items()})
    projected: dict[tuple[str, ...], list[int]] = {}
    for r, (name, kind, _, _, _) in enumerate(ranges):
        inside = [k for k, found in enumerate(holding) if r in found]
        if inside:
            span = max(kernels[k][3] + kernels[k][4] for k in inside) - min(kernels[k][3] for k in inside)
            projected.setdefault((f":{name}", style[kind]), []).append(span)
    run = run_cli("stats", "-r", "nvtx_gpu_proj_sum", "--format", "csv", path)
    assert run.code == 0, run.err
    ours = printed(run.out, ("Range", "Style"), "Total Proj Time (ns)")
    ours = {key: (value[0],) + value[2:] for key, value in ours.items()}  # without Total Range Time: 6 values
    assert ours.keys() == projected.keys()
    for key, spans in projected.items():
        total, count, mean, median, low, high, deviation = stats_of(spans)
        assert near({key: ours[key]}, {key: (total, count, mean, median, low, high)})


SQL_OF = {"nvtx_kern_sum": (nvtx_kern_sum_rows, "Kern Inst"), "nvtx_gpu_proj_sum": (nvtx_gpu_proj_sum_rows, None)}


@pytest.mark.parametrize("report", corpus_params())
@pytest.mark.parametrize("rule", list(SQL_OF))
def test_statistics_equal_nsight_style_sql(report, rule):
    """Every group's statistics equal those of bench/nsys_sql.py's join, computed by SQLite."""
    rows_sql, _ = SQL_OF[rule]
    with sqlite3.connect(f"file:{report}?mode=ro", uri=True) as con:
        rows = rows_sql(con)
        con.create_function("sqrt", 1, lambda x: None if x is None else x ** 0.5)
        expected = con.execute(STATISTICS_SQL.format(rows=f"SELECT k, v FROM ({rows})")).fetchall() if rows else []
    run = run_cli("stats", "-r", rule, "--format", "csv", report)
    table = list(csv.reader(io.StringIO(run.out))) if run.code == 0 else [[]]
    if not expected:
        assert len(table) <= 1
        return
    header = table[0]
    if rule == "nvtx_kern_sum":
        at = header.index("Kern Inst")
        mine = [(float(r[at + 1]), float(r[at]), *map(float, r[at + 2:at + 7])) for r in table[1:]]
    else:
        at = header.index("Total Proj Time (ns)")
        mine = [(float(r[at]), float(r[at + 2]), *map(float, r[at + 3:at + 8])) for r in table[1:]]
    theirs = [tuple(float(v) for v in group) for group in expected]
    for got, want in zip(in_order(mine, 1), in_order(theirs, 1), strict=True):
        assert got == pytest.approx(want, abs=0.051)
