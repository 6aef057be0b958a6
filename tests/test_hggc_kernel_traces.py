"""hggc_kern_exec_trace, hggc_ppu_kern_gb_sum and hggc_ppu_kern_gb_trace: golden output on a
hand-checked fixture (graph launch, early kernel, zero-length events), options, brute force."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from test_hggc_api import assert_summary, brute_summary, csv, run_json

from asysstats.synth.writer import ReportWriter

from conftest import run_cli

PID, TID = 100, 101
THREAD, PROCESS = (PID << 24) | TID, PID << 24
EXEC_HEADER = ("Row#,API Start (ns),API Dur (ns),Queue Start (ns),Queue Dur (ns),Kernel Start (ns),Kernel Dur (ns),"
               "Total Dur (ns),PID,TID,DevId,API Function,GridXYZ,BlockXYZ,Kernel Name,")
GB_SUM_HEADER = ("Row#,Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),"
                 "GridXYZ,BlockXYZ,Name,")
GB_TRACE_HEADER = "Row#,Start (ns),Duration (ns),PID,Device ID,Context ID,Stream ID,GridXYZ,BlockXYZ,Name,"
ADD = '"add(int*, int*, int*)"'
MUL = '"mul(float)"'


def build(writer):
    launch, graph, add, mul = writer.strings(["hggcLaunchKernel", "hggcGraphLaunch", "_Z3addPiS_S_", "_Z3mulf"])
    # API (thread 101):  launch#1 [100,150)       graph#2 [300,400)            launch#3 [600,600)
    # device 0:                   add [200,260)      mul [350,380)                      add [600,600)
    # device 1:                                                   mul [420,500)   add [700,740) (corr 9: no call)
    writer.add("runtime", start=[100, 300, 600], end=[150, 400, 600], globalTid=THREAD, correlationId=[1, 2, 3],
               nameId=[launch, graph, launch])
    writer.add("kernels", start=[200, 350, 420, 600, 700], end=[260, 380, 500, 600, 740], deviceId=[0, 0, 1, 0, 1],
               correlationId=[1, 2, 2, 3, 9], globalPid=PROCESS, contextId=1, streamId=[7, 7, 8, 7, 8],
               demangledName=[add, mul, mul, add, add], shortName=[add, mul, mul, add, add],
               mangledName=[add, mul, mul, add, add], gridX=[2, 4, 4, 2, 1], gridY=1, gridZ=1,
               blockX=[128, 64, 64, 128, 32], blockY=1, blockZ=1)
    writer.close()
    return writer.path


def test_exec_trace_golden(writer):
    assert csv(build(writer), "hggc_kern_exec_trace") == [
        EXEC_HEADER,
        f'1,100,50,150,50,200,60,160,100,101,0,"hggcLaunchKernel","2 1 1","128 1 1",{ADD},',
        f'2,300,100,"-","-",350,30,80,100,101,0,"hggcGraphLaunch","4 1 1","64 1 1",{MUL},',
        f'3,300,100,400,20,420,80,200,100,101,1,"hggcGraphLaunch","4 1 1","64 1 1",{MUL},',
        f'4,600,0,600,0,600,0,0,100,101,0,"hggcLaunchKernel","2 1 1","128 1 1",{ADD},',
    ]


def test_exec_trace_name_modes(writer):
    path = build(writer)
    assert csv(path, "hggc_kern_exec_trace:base")[1].endswith(',"add",')
    assert csv(path, "hggc_kern_exec_trace:mangled")[2].endswith(',"_Z3mulf",')


def test_gb_sum_golden(writer):
    # add 2x1x1/128: 60, 0  -> 60;  mul 4x1x1/64: 30, 80 -> 110;  add 1x1x1/32: 40
    assert csv(build(writer), "hggc_ppu_kern_gb_sum") == [
        GB_SUM_HEADER,
        f'1,52.4,110,2,55,55,30,80,25,"4 1 1","64 1 1",{MUL},',
        f'2,28.6,60,2,30,30,0,60,30,"2 1 1","128 1 1",{ADD},',
        f'3,19.0,40,1,40,40,40,40,0,"1 1 1","32 1 1",{ADD},',
    ]


def test_gb_sum_device_filter(writer):
    path = build(writer)
    assert csv(path, "hggc_ppu_kern_gb_sum:device=1:base") == [
        GB_SUM_HEADER,
        '1,66.7,80,1,80,80,80,80,0,"4 1 1","64 1 1","mul",',
        '2,33.3,40,1,40,40,40,40,0,"1 1 1","32 1 1","add",',
    ]
    assert csv(path, "hggc_ppu_kern_gb_sum:device=5") == [GB_SUM_HEADER]


def test_gb_sum_ties_break_by_name_then_dimensions(writer):
    k, a = writer.strings(["kern_b", "kern_a"])
    writer.add("kernels", start=[0, 10, 20], end=[5, 15, 25], deviceId=0, demangledName=[k, a, a],
               gridX=[1, 2, 1], gridY=1, gridZ=1, blockX=1, blockY=1, blockZ=1)
    writer.close()
    assert [line.split(",", 9)[-1] for line in csv(writer.path, "hggc_ppu_kern_gb_sum")[1:]] == [
        '"1 1 1","1 1 1","kern_a",', '"2 1 1","1 1 1","kern_a",', '"1 1 1","1 1 1","kern_b",']


def test_gb_trace_golden(writer):
    assert csv(build(writer), "hggc_ppu_kern_gb_trace") == [
        GB_TRACE_HEADER,
        f'1,200,60,100,0,1,7,"2 1 1","128 1 1",{ADD},',
        f'2,350,30,100,0,1,7,"4 1 1","64 1 1",{MUL},',
        f'3,420,80,100,1,1,8,"4 1 1","64 1 1",{MUL},',
        f'4,600,0,100,0,1,7,"2 1 1","128 1 1",{ADD},',
        f'5,700,40,100,1,1,8,"1 1 1","32 1 1",{ADD},',
    ]


def test_missing_kernels_name_the_collection_option(writer):
    writer.add("runtime", start=[0], end=[1], globalTid=THREAD, nameId=[writer.string("x")])
    writer.close()
    for rule in ("hggc_kern_exec_trace", "hggc_ppu_kern_gb_sum", "hggc_ppu_kern_gb_trace"):
        run = run_cli("stats", "-r", rule, writer.path)
        assert run.code == 2 and "does not contain HGGC kernel data (collect with --trace hggc)" in run.err


KERNELS = st.lists(st.tuples(st.integers(0, 2), st.integers(1, 2), st.integers(0, 500), st.integers(0, 40)),
                   max_size=25)


@settings(max_examples=40, deadline=None)
@given(KERNELS)
def test_gb_sum_matches_brute_force(kernels):
    names = ["k0", "K1", "k2"]
    with tempfile.TemporaryDirectory() as tmp:
        w = ReportWriter(Path(tmp) / "r.asysrep")
        ids = w.strings(names)
        w.add("kernels", start=[s for _, _, s, _ in kernels], end=[s + d for _, _, s, d in kernels], deviceId=0,
              demangledName=[int(ids[k]) for k, _, _, _ in kernels], gridX=[g for _, g, _, _ in kernels],
              gridY=1, gridZ=1, blockX=32, blockY=1, blockZ=1)
        w.close()
        values: dict[str, list[int]] = {}
        for k, g, _, d in kernels:
            values.setdefault(f"{names[k]}|{g} 1 1", []).append(d)
        expected = brute_summary(values)
        got = run_json(w.path, "hggc_ppu_kern_gb_sum")
        for row in got:
            row["Key"] = f"{row['Name']}|{row['GridXYZ']}"
        assert_summary(got, expected, "Key", "Instances")
