"""The trace reports that mirror ``nsys stats`` (rulebook/nsys_traces.py): NVIDIA's CSV on a hand-made
Nsight export, brute-force properties, the corpus, and the legacy ``gputrace`` nsys printed for
openacc_nn_r20."""

from __future__ import annotations

import csv
import io
import re
import sqlite3
from decimal import ROUND_HALF_UP, Decimal

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import NSYS_CORPUS, corpus_params, run_cli
from asysstats.reading.schema import NSYS
from asysstats.synth.writer import ReportWriter

PID, TID = 1000, 1
GLOBAL_PID, GLOBAL_TID = PID << 24, (PID << 24) | TID


def build(path):
    """One thread of one process on device 0 ("NVIDIA Test GPU"), context 1, stream 7.

    API calls      malloc [0,50)  launch [100,110)  memcpyAsync [200,205)  launch [300,320)  memset [400,402) -> 1
    GPU            add [120,170) (queued 110..120)     memcpy [203,3203)  mul [310,330) (no queue)  memset [3300,3304)
    NVTX push/pop  step [0,500) > inner [100,200) > deep [120,150);  Torch:fwd [600,700);  start/end x [0,10)
    """
    writer = ReportWriter(path, NSYS)
    writer.add("devices", id=[0], name=["NVIDIA Test GPU"])
    writer.add("threads", nameId=[writer.string("main")], priority=[20], globalTid=[GLOBAL_TID])
    malloc, launch, copy, memset = writer.strings(["cudaMalloc_v3020", "cudaLaunchKernel_v7000",
                                                   "cudaMemcpyAsync_v3020", "cudaMemset_v3020"])
    writer.add("runtime", start=[0, 100, 200, 300, 400], end=[50, 110, 205, 320, 402], globalTid=GLOBAL_TID,
               nameId=[malloc, launch, copy, launch, memset], correlationId=[1, 2, 3, 4, 5],
               returnValue=[0, 0, 0, 0, 1])
    demangled = writer.strings(["add(int*, int*, int*)", "mul(int*, int*, int*)"])
    writer.add("kernels", start=[120, 310], end=[170, 330], deviceId=0, contextId=1, streamId=7,
               correlationId=[2, 4], globalPid=GLOBAL_PID, demangledName=demangled,
               shortName=writer.strings(["add", "mul"]), mangledName=writer.strings(["_Z3addPiS_S_", "_Z3mulPiS_S_"]),
               gridX=[2, 4096], gridY=[1, 2], gridZ=1, blockX=[128, 256], blockY=1, blockZ=1,
               registersPerThread=[32, 16], staticSharedMemory=[1024, 0], dynamicSharedMemory=[0, 49152])
    writer.add("memcpy", start=[203], end=[3203], deviceId=0, contextId=1, streamId=7, correlationId=[3],
               globalPid=GLOBAL_PID, bytes=[1_500_000], copyKind=1, srcKind=1, dstKind=3)  # the writer's kind enum
    writer.add("memset", start=[3300], end=[3304], deviceId=0, contextId=1, streamId=7, correlationId=[5],
               globalPid=GLOBAL_PID, bytes=[4], memKind=3)
    writer.add("hgtx", start=[0, 0, 100, 120, 0, 600], end=[-1, 500, 200, 150, 10, 700],
               eventType=[75, 59, 59, 59, 60, 59], domainId=[7, 0, 0, 0, 0, 7],
               text=["Torch", "step", "inner", "deep", "x", "fwd"], globalTid=GLOBAL_TID)
    writer.close()
    return writer.path


GOLDEN = {
    "cuda_gpu_trace": [
        "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),DymSMem (MB),Bytes (MB),"
        "Throughput (MB/s),SrcMemKd,DstMemKd,Device,Ctx,GreenCtx,Strm,Name",
        '120,50,2,2,1,1,128,1,1,32,0.001,0.000,,,,,NVIDIA Test GPU (0),1,,7,"add(int*, int*, int*)"',
        # 1.5 MB x (10^9 // 3000 = 333333) per second, as nsys computes it (not 500000.000)
        "203,3000,3,,,,,,,,,,1.500,499999.500,Pageable,Device,NVIDIA Test GPU (0),1,,7,[CUDA memcpy Host-to-Device]",
        '310,20,4,4096,2,1,256,1,1,16,0.000,0.049,,,,,NVIDIA Test GPU (0),1,,7,"mul(int*, int*, int*)"',
        "3300,4,5,,,,,,,,,,0.000,1000.000,Device,,NVIDIA Test GPU (0),1,,7,[CUDA memset]",
    ],
    "cuda_api_trace": [
        "Start (ns),Duration (ns),Name,Result,CorrID,Pid,Tid,T-Pri,Thread Name",
        "0,50,cudaMalloc,0,1,1000,1,20,main",
        "100,10,cudaLaunchKernel,0,2,1000,1,20,main",
        "200,5,cudaMemcpyAsync,0,3,1000,1,20,main",
        "300,20,cudaLaunchKernel,0,4,1000,1,20,main",
        "400,2,cudaMemset,1,5,1000,1,20,main",
    ],
    "cuda_kern_exec_trace": [
        "API Start (ns),API Dur (ns),Queue Start (ns),Queue Dur (ns),Kernel Start (ns),Kernel Dur (ns),"
        "Total Dur (ns),PID,TID,DevId,API Function,GridXYZ,BlockXYZ,Kernel Name",
        '100,10,110,10,120,50,70,1000,1,0,cudaLaunchKernel,   2    1    1, 128    1    1,"add(int*, int*, int*)"',
        '300,20,,,310,20,30,1000,1,0,cudaLaunchKernel,4096    2    1, 256    1    1,"mul(int*, int*, int*)"',
    ],
    "nvtx_pushpop_trace": [
        "Start (ns),End (ns),Duration (ns),DurChild (ns),DurNonChild (ns),Name,PID,TID,Lvl,NumChild,RangeId,"
        "ParentId,RangeStack,NameTree",
        "0,500,500,100,400,:step,1000,1,0,1,2,,:2,:step",
        "100,200,100,30,70,:inner,1000,1,1,1,3,2,:2:3,--:inner",
        "120,150,30,0,30,:deep,1000,1,2,0,4,3,:2:3:4,----:deep",
        "600,700,100,0,100,Torch:fwd,1000,1,0,0,6,,:6,Torch:fwd",
    ],
}


@pytest.mark.parametrize("rule", list(GOLDEN))
def test_golden_csv(tmp_path, rule):
    run = run_cli("stats", "-r", rule, "--format", "csv", build(tmp_path / "report.sqlite"))
    assert run.code == 0, run.err
    assert run.out.splitlines() == GOLDEN[rule]


@pytest.mark.parametrize("alias, rule", [("gputrace", "cuda_gpu_trace"), ("cudaapitrace", "cuda_api_trace"),
                                         ("kernexectrace", "cuda_kern_exec_trace"),
                                         ("nvtxpptrace", "nvtx_pushpop_trace")])
def test_nsys_2022_names_are_aliases(tmp_path, alias, rule):
    run = run_cli("stats", "-r", alias, "--format", "csv", build(tmp_path / "report.sqlite"))
    assert run.out.splitlines() == GOLDEN[rule]


@pytest.mark.parametrize("option, name", [("base", "add"), ("mangled", "_Z3addPiS_S_")])
def test_kernel_name_options(tmp_path, option, name):
    path = build(tmp_path / "report.sqlite")
    for rule in ("cuda_gpu_trace", "cuda_kern_exec_trace"):
        run = run_cli("stats", "-r", f"{rule}:{option}", "--format", "csv", path)
        assert run.code == 0, run.err
        assert run.out.splitlines()[1].endswith("," + name)


def test_console_table(tmp_path):
    run = run_cli("stats", "-r", "cuda_api_trace", "--format", "column", build(tmp_path / "report.sqlite"))
    assert run.out.splitlines()[:3] == [
        " Start (ns)  Duration (ns)        Name        Result  CorrID  Pid   Tid  T-Pri  Thread Name",
        " ----------  -------------  ----------------  ------  ------  ----  ---  -----  -----------",
        "          0             50  cudaMalloc             0       1  1000    1     20  main",
    ]


def test_missing_tables_say_so(tmp_path):
    writer = ReportWriter(tmp_path / "empty.sqlite", NSYS)
    writer.add("osrt", start=[0], end=[1], globalTid=GLOBAL_TID, nameId=[writer.string("read")])
    writer.close()
    for rule in GOLDEN:  # as nsys: one SKIPPED line, status 0 (D37)
        run = run_cli("stats", "-r", rule, "--format", "csv", writer.path)
        assert run.code == 0 and run.out == "" and run.err.startswith(f"SKIPPED: {writer.path} does not contain ")
        assert len(run.err.strip().splitlines()) == 1, run.err


def rows_of(rule: str, path) -> list[dict[str, str]]:
    run = run_cli("stats", "-r", rule, "--format", "csv", path)
    assert run.code == 0, run.err
    return list(csv.DictReader(io.StringIO(run.out)))


# Properties against brute-force references ---------------------------------------------------------------

PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
LAUNCHES = st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 500), st.integers(-300, 300),
                              st.integers(1, 400), st.booleans()), min_size=1, max_size=20)


@PROPERTY
@given(LAUNCHES)
def test_exec_trace_queue_times(tmp_path_factory, launches):
    """Per launch (call start, call duration, kernel start offset from the call's end, kernel duration,
    whether a kernel ran): the queue is kernel start - call end when the kernel starts at or after the
    call returns, else empty; total = kernel end - call start; rows by call start; no kernel, no row."""
    path = tmp_path_factory.mktemp("exec") / "exec.sqlite"
    writer = ReportWriter(path, NSYS)
    starts = [start for start, *_ in launches]
    ends = [start + length for start, length, *_ in launches]
    writer.add("runtime", start=starts, end=ends, globalTid=GLOBAL_TID, correlationId=list(range(1, len(starts) + 1)),
               nameId=writer.string("cudaLaunchKernel_v7000"))
    ran = [i for i, launch in enumerate(launches) if launch[4]]
    kernel_starts = [max(0, ends[i] + launches[i][2]) for i in ran]
    kernel_ends = [start + launches[i][3] for start, i in zip(kernel_starts, ran)]
    name = writer.string("k")
    # a kernel no call launched (correlation id 10^6) keeps the table when no launch ran one
    writer.add("kernels", start=kernel_starts + [0], end=kernel_ends + [1],
               correlationId=[i + 1 for i in ran] + [10 ** 6], deviceId=0, globalPid=GLOBAL_PID, demangledName=name,
               shortName=name, gridX=1, gridY=1, gridZ=1, blockX=1, blockY=1, blockZ=1, streamId=7, contextId=1)
    writer.close()
    expected = []
    for kernel_start, i in zip(kernel_starts, ran):
        queued = kernel_start >= ends[i]
        expected.append((starts[i], ends[i] - starts[i], str(ends[i]) if queued else "",
                         str(kernel_start - ends[i]) if queued else "", kernel_start,
                         kernel_start + launches[i][3] - starts[i]))
    got = [(int(r["API Start (ns)"]), int(r["API Dur (ns)"]), r["Queue Start (ns)"], r["Queue Dur (ns)"],
            int(r["Kernel Start (ns)"]), int(r["Total Dur (ns)"])) for r in rows_of("cuda_kern_exec_trace", path)]
    assert [g[0] for g in got] == sorted(g[0] for g in got)
    assert sorted(got) == sorted(expected)


NESTING = st.lists(st.tuples(st.sampled_from(["push", "pop"]), st.integers(0, 30), st.sampled_from("abc")),
                   max_size=40)


@PROPERTY
@given(NESTING)
def test_pushpop_nesting_against_a_stack_walk(tmp_path_factory, steps):
    """Random pushes and pops on one thread, walked with a stack: each range's level, parent, number of
    children and child time as the naive walk finds them."""
    clock, stack, ranges = 0, [], []  # ranges: [start, end, name, level, parent index]
    for action, gap, name in steps:
        clock += gap
        if action == "push":
            stack.append(len(ranges))
            ranges.append([clock, None, name, len(stack) - 1, stack[-2] if len(stack) > 1 else None])
        elif stack:
            ranges[stack.pop()][1] = clock
    for index in stack:
        ranges[index][1] = clock + 1
    if not ranges:
        return
    path = tmp_path_factory.mktemp("nvtx") / "nvtx.sqlite"
    writer = ReportWriter(path, NSYS)
    writer.add("hgtx", start=[r[0] for r in ranges], end=[r[1] for r in ranges], eventType=59,
               text=[r[2] for r in ranges], globalTid=GLOBAL_TID)
    writer.close()
    children = {i: [j for j, r in enumerate(ranges) if r[4] == i] for i in range(len(ranges))}
    expected = sorted((r[0], r[1], f":{r[2]}", r[3], len(children[i]), sum(ranges[j][1] - ranges[j][0]
                                                                          for j in children[i]),
                       ("" if r[4] is None else ranges[r[4]][0], "" if r[4] is None else ranges[r[4]][1]))
                      for i, r in enumerate(ranges))
    rows = rows_of("nvtx_pushpop_trace", path)
    by_id = {row["RangeId"]: row for row in rows}
    def parent(row: dict[str, str]) -> tuple[int, int] | tuple[str, str]:
        above = by_id.get(row["ParentId"])
        return (int(above["Start (ns)"]), int(above["End (ns)"])) if above else ("", "")

    got = sorted((int(r["Start (ns)"]), int(r["End (ns)"]), r["Name"], int(r["Lvl"]), int(r["NumChild"]),
                  int(r["DurChild (ns)"]), parent(r)) for r in rows)
    # a zero-length range and ranges touching at one instant nest as analysis/nesting.py decides (D12)
    if all(r[1] > r[0] for r in ranges) and len({r[0] for r in ranges} | {r[1] for r in ranges}) == 2 * len(ranges):
        assert got == expected
    assert all(row["NameTree"] == "--" * int(row["Lvl"]) + row["Name"] for row in rows)
    assert [int(r["Start (ns)"]) for r in rows] == sorted(int(r["Start (ns)"]) for r in rows)


MILLI = Decimal("0.001")
OPERATIONS = st.lists(st.tuples(st.sampled_from(["kernel", "memcpy", "memset"]), st.integers(0, 10_000),
                                st.integers(0, 5_000), st.integers(0, 10 ** 9)), min_size=1, max_size=25)


@PROPERTY
@given(OPERATIONS)
@example([("memcpy", 0, 10, 4_500), ("memset", 5, 3, 2_500)])  # MB on a half: 0.0045 -> 0.005, 0.0025 -> 0.003
def test_gpu_trace_against_brute_force(tmp_path_factory, operations):
    """Random kernels, copies and memsets (kind, start, duration, bytes): one row each by start, the
    MB to three decimals (the exact decimal, a half away from zero) and the throughput as
    bytes / 10^6 x (10^9 // duration), empty for no time."""
    path = tmp_path_factory.mktemp("gpu") / "gpu.sqlite"
    writer = ReportWriter(path, NSYS)
    name = writer.string("k")
    for kind in ("kernel", "memcpy", "memset"):
        mine = [(i, op) for i, op in enumerate(operations) if op[0] == kind]
        if not mine:
            continue
        common = {"start": [op[1] for _, op in mine], "end": [op[1] + op[2] for _, op in mine], "deviceId": 0,
                  "contextId": 1, "streamId": 7, "correlationId": [i for i, _ in mine], "globalPid": GLOBAL_PID}
        if kind == "kernel":
            writer.add("kernels", demangledName=name, shortName=name, gridX=1, gridY=1, gridZ=1, blockX=1, blockY=1,
                       blockZ=1, registersPerThread=8, staticSharedMemory=0, dynamicSharedMemory=0, **common)
        elif kind == "memcpy":
            writer.add("memcpy", bytes=[op[3] for _, op in mine], copyKind=2, srcKind=2, dstKind=0, **common)
        else:
            writer.add("memset", bytes=[op[3] for _, op in mine], memKind=2, **common)
    writer.close()
    rows = rows_of("cuda_gpu_trace", path)
    assert [int(r["Start (ns)"]) for r in rows] == sorted(op[1] for op in operations)
    for row in rows:
        kind, start, duration, size = operations[int(row["CorrId"])]
        assert (int(row["Start (ns)"]), int(row["Duration (ns)"])) == (start, duration)
        if kind == "kernel":
            assert row["Name"] == "k" and row["Bytes (MB)"] == "" and row["GrdX"] == "1"
            continue
        assert row["Name"] == ("[CUDA memset]" if kind == "memset" else "[CUDA memcpy Device-to-Host]")
        assert row["Bytes (MB)"] == str(Decimal(size).scaleb(-6).quantize(MILLI, ROUND_HALF_UP)) and row["GrdX"] == ""
        rate = size / 10 ** 6 * (10 ** 9 // duration) if duration else None
        assert row["Throughput (MB/s)"] == ("" if rate is None else f"{rate:.3f}") or \
            abs(float(row["Throughput (MB/s)"]) - rate) <= 0.0005 + 1e-12 * rate  # binary rounding of .xxx5


# The corpus ------------------------------------------------------------------------------------------------

COUNT_SQL = {  # rows and total duration of each trace, as SQLite counts them
    "cuda_gpu_trace": ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"],
    "cuda_api_trace": ["CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER"],
}


@pytest.mark.parametrize("report", corpus_params())
@pytest.mark.parametrize("rule", list(GOLDEN))
def test_corpus_runs(report, rule):
    """Every export: a table, or one line saying what is missing (exit 2), never a traceback; the GPU and
    API traces hold every row of their tables with their durations, as SQLite sums them."""
    run = run_cli("stats", "-r", rule, "--format", "csv", report)
    assert run.code in (0, 2), run.err
    if run.code == 2:
        assert len(run.err.strip().splitlines()) == 1 and "does not contain" in run.err, run.err
        return
    rows = list(csv.DictReader(io.StringIO(run.out)))
    if rule in COUNT_SQL:
        with sqlite3.connect(f"file:{report}?mode=ro", uri=True) as con:
            tables = {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            counts = [con.execute(f"SELECT count(*), coalesce(sum(end - start), 0) FROM {table}").fetchone()
                      for table in COUNT_SQL[rule] if table in tables]
        assert (len(rows), sum(int(r["Duration (ns)"]) for r in rows)) == \
            (sum(c[0] for c in counts), sum(c[1] for c in counts))


LEGACY = NSYS_CORPUS / "openacc_nn_r20.stats" / "failed_forward_prop.out"
LEGACY_NAMES = {"[CUDA memcpy HtoD]": "[CUDA memcpy Host-to-Device]"}  # nsys 2024 names a copy by its kind's label


def legacy_trace(path) -> list[dict[str, str]]:
    """The rows of the 'CUDA Kernel & Memory Operations Trace' a pre-2021 nsys printed, cut where its
    line of dashes cuts the columns."""
    lines = path.read_text(encoding="utf-8").splitlines()
    first = lines.index("CUDA Kernel & Memory Operations Trace:") + 2
    spans = [match.span() for match in re.finditer(r"-+", lines[first + 1])]
    names = [lines[first][a:b].strip() for a, b in spans[:-1]] + [lines[first][spans[-1][0]:].strip()]
    rows = []
    for line in lines[first + 2:]:
        if not line.strip():
            break
        rows.append(dict(zip(names, [line[a:b].strip() for a, b in spans[:-1]] + [line[spans[-1][0]:].strip()])))
    return rows


def spanish(cell: str) -> float | None:
    """An es-ES number (``5.036,000``: dots group thousands, a comma before the decimals)."""
    return float(cell.replace(".", "").replace(",", ".")) if cell else None


@pytest.mark.skipif(not LEGACY.is_file(), reason="../shared/corpus/nsys is absent")
def test_legacy_gputrace_values_are_ours():
    """The legacy gputrace of openacc_nn_r20, row for row (order, durations, CorrId, grid, block, Reg/Trd,
    shared memory, bytes, throughput, memory kinds, device, context, stream, names). What differs is the
    legacy version's: 'Start(sec)' printed 0,000000 on every row (the starts are 0.33 s to 0.42 s: compared
    through the row order); sizes in bytes where nsys 2024 prints MB to three decimals; one Bytes cell cut
    by the console ('552.9…'); the throughput a whole MB/s from the exact quotient, where nsys 2024/2025
    prints bytes / 10^6 x (10^9 // duration) to three decimals; '[CUDA memcpy HtoD]' for 2024's
    '[CUDA memcpy Host-to-Device]'; no GreenCtx column."""
    legacy = legacy_trace(LEGACY)
    ours = rows_of("cuda_gpu_trace", NSYS_CORPUS / "openacc_nn_r20.sqlite")
    assert len(ours) == len(legacy) == 3890
    assert {row["Start(sec)"] for row in legacy} == {"0,000000"}
    same = {"CorrId": "CorrId", "GrdX": "GrdX", "GrdY": "GrdY", "GrdZ": "GrdZ", "BlkX": "BlkX", "BlkY": "BlkY",
            "BlkZ": "BlkZ", "Reg/Trd": "Reg/Trd", "Duration(nsec)": "Duration (ns)"}
    for theirs, mine in zip(legacy, ours):
        for their_column, my_column in same.items():
            assert spanish(theirs[their_column]) == (float(mine[my_column]) if mine[my_column] else None)
        for column in ("SrcMemKd", "DstMemKd", "Device", "Ctx", "Strm"):
            assert theirs[column] == mine[column]
        assert LEGACY_NAMES.get(theirs["Name"], theirs["Name"]) == mine["Name"]
        for their_column, my_column in (("StcSMem", "StcSMem (MB)"), ("DymSMem", "DymSMem (MB)")):
            assert (spanish(theirs[their_column]) is None) == (mine[my_column] == "")
            if mine[my_column]:
                assert f"{spanish(theirs[their_column]) / 10 ** 6:.3f}" == mine[my_column]
        if not theirs["Bytes"]:
            assert mine["Bytes (MB)"] == mine["Throughput (MB/s)"] == ""
            continue
        duration = int(mine["Duration (ns)"])
        if theirs["Bytes"].endswith("\u2026"):  # cut by the console: its digits bound the size
            digits = theirs["Bytes"][:-1].replace(".", "")
            low = int(digits) * 10 ** (6 - len(digits))
            assert f"{low / 10 ** 6:.3f}" <= mine["Bytes (MB)"] <= f"{(low + 10 ** (6 - len(digits))) / 10 ** 6:.3f}"
            assert abs(float(mine["Throughput (MB/s)"]) - spanish(theirs["Thru(MB/s)"])) < 1
            continue
        size = int(spanish(theirs["Bytes"]))
        assert mine["Bytes (MB)"] == f"{size / 10 ** 6:.3f}"
        assert spanish(theirs["Thru(MB/s)"]) == size * 1000 // duration
        assert mine["Throughput (MB/s)"] == f"{size / 10 ** 6 * (10 ** 9 // duration):.3f}"


PIPIT = NSYS_CORPUS / "pipit_cloverleaf.stats" / "cloverleaf-cuda_api_trace.csv"


@pytest.mark.skipif(not PIPIT.is_file(), reason="../shared/corpus/nsys is absent")
def test_pipit_api_trace_timestamps():
    """pipit's conversion of cuda_api_trace (an Enter and a Leave row per call): the same calls, starts
    and ends as ours. pipit keeps the export's raw names (cudaMalloc_v3020); nsys, and we, drop the
    '_v' + four digits."""
    with PIPIT.open(encoding="utf-8") as handle:
        events = list(csv.DictReader(handle))
    theirs = sorted((int(e["Timestamp (ns)"]), int(e["_matching_timestamp"]),
                     re.sub(r"_v[0-9]{4}$", "", e["Name"])) for e in events if e["Event Type"] == "Enter")
    mine = sorted((int(r["Start (ns)"]), int(r["Start (ns)"]) + int(r["Duration (ns)"]), r["Name"])
                  for r in rows_of("cuda_api_trace", NSYS_CORPUS / "pipit_cloverleaf.sqlite"))
    assert mine == theirs
