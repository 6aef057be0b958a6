"""The rules that mirror ``nsys analyze`` (rulebook/nsys_analyze.py): NVIDIA's CSV on a hand-made Nsight
export, the options, brute-force references, and every corpus export run without a traceback."""

from __future__ import annotations

import csv
import io
import math
import sqlite3

import pytest
from conftest import corpus_params, run_cli
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from asysstats.reading.schema import NSYS, NSYS_MEM_KIND_LABELS
from asysstats.synth.writer import ReportWriter

PID, TID, OTHER_TID = 1000, 7, 8
GPID = PID << 24
PAGEABLE, PINNED, DEVICE = 0, 1, 2  # Nsight's numbering of memory kinds (ENUM_CUDA_MEM_KIND)
HOST_TO_DEVICE, DEVICE_TO_HOST = 1, 2
MS = 1_000_000


def nsight_numbering(path, keep_enumeration=True):
    """Number memory kinds as Nsight's own ENUM_CUDA_MEM_KIND does (the synthetic writer uses
    CUPTI's numbering); without ``keep_enumeration`` the table is dropped (older exports)."""
    con = sqlite3.connect(path)
    with con:
        con.execute("DELETE FROM ENUM_CUDA_MEM_KIND")
        con.executemany("INSERT INTO ENUM_CUDA_MEM_KIND VALUES (?, ?, ?)",
                        [(k, v.upper(), v) for k, v in NSYS_MEM_KIND_LABELS.items()])
        if not keep_enumeration:
            con.execute("DROP TABLE ENUM_CUDA_MEM_KIND")
    con.close()
    return path


def build(path):
    """Process 1000 (device 0, stream 7) and process 2000 (device 0), each op launched by its call (corr id):

    calls (tid 7)   1 cudaMemcpyAsync [0,5)   2 cudaMemcpyAsync [40,45)  3 cudaMemcpy [100,160)  4 cudaMemcpy [170,175)
                    9 cudaMemcpy [180,182)    5 cudaMemset [200,230)     6 cudaMemsetAsync [240,245)
                    7 cudaMemset [260,262)    8 cudaLaunchKernel [300,305)
                    cudaEventSynchronize [10,20)  cudaDeviceSynchronize [305, 400 ms + 305)
    calls (tid 8)   cudaStreamSynchronize [400 ms + 400, 700 ms)
    memcpy  1 [10,30)    Pageable->Device 1 MB       async + pageable: cuda_memcpy_async
            2 [50,60)    Pinned->Device   2 MB       async, pinned: nothing
            3 [110,150)  Device->Pageable 4.19 MB    sync: cuda_memcpy_sync
            4 [171,173)  Host-to-Device 65536 B      sync but 64 KB or less Host-to-Device: not blocking
            9 [183,186)  Host-to-Device 65537 B      sync: cuda_memcpy_sync
    memset  5 [205,225)  Pinned, green context 2     sync: cuda_memset_sync
            6 [250,255)  Device (async)   7 [263,265) Device (sync, device memory): nothing
    kernel  8 [310,400) context 3, then [700 ms + 400, 700 ms + 1000): a 700 ms gap opened by context 3
    pid 2000 kernels [100,200) [150,250) (overlapping) [300,400), context 5: a 50 ns idle stretch at 250
    """
    writer = ReportWriter(path, NSYS)
    names = writer.strings(["cudaMemcpyAsync_v3020", "cudaMemcpy_v3020", "cudaMemset_v3020",
                            "cudaMemsetAsync_v3020", "cudaLaunchKernel_v7000", "cudaEventSynchronize_v3020",
                            "cudaDeviceSynchronize_v3020", "cudaStreamSynchronize_v3020"])
    memcpy_async, memcpy, memset, memset_async, launch, event_sync, device_sync, stream_sync = names
    writer.add("runtime", start=[0, 40, 100, 170, 180, 200, 240, 260, 300, 10, 305, 400 * MS + 400],
               end=[5, 45, 160, 175, 182, 230, 245, 262, 305, 20, 400 * MS + 305, 700 * MS],
               globalTid=[GPID | TID] * 11 + [GPID | OTHER_TID],
               nameId=[memcpy_async, memcpy_async, memcpy, memcpy, memcpy, memset, memset_async, memset, launch,
                       event_sync, device_sync, stream_sync],
               correlationId=[1, 2, 3, 4, 9, 5, 6, 7, 8, 20, 21, 22])
    writer.add("memcpy", start=[10, 50, 110, 171, 183], end=[30, 60, 150, 173, 186], deviceId=0, contextId=1,
               streamId=7, correlationId=[1, 2, 3, 4, 9], globalPid=GPID,
               bytes=[1_000_000, 2_000_000, 4_194_304, 65_536, 65_537],
               copyKind=[HOST_TO_DEVICE, HOST_TO_DEVICE, DEVICE_TO_HOST, HOST_TO_DEVICE, HOST_TO_DEVICE],
               srcKind=[PAGEABLE, PINNED, DEVICE, PAGEABLE, PAGEABLE],
               dstKind=[DEVICE, DEVICE, PAGEABLE, DEVICE, DEVICE])
    writer.add("memset", start=[205, 250, 263], end=[225, 255, 265], deviceId=0, contextId=1, streamId=7,
               correlationId=[5, 6, 7], globalPid=GPID, bytes=4096, memKind=[PINNED, DEVICE, DEVICE],
               greenContextId=[2, 0, 0])
    kernel = writer.string("vecadd")
    writer.add("kernels", start=[310, 700 * MS + 400, 100, 150, 300], end=[400, 700 * MS + 1000, 200, 250, 400],
               deviceId=0, contextId=[3, 1, 5, 5, 5], streamId=7, correlationId=[8, 30, 1, 2, 3],
               globalPid=[GPID, GPID, 2000 << 24, 2000 << 24, 2000 << 24], demangledName=kernel, shortName=kernel)
    writer.close()
    return nsight_numbering(path)


@pytest.fixture
def report(tmp_path):
    return build(tmp_path / "report.sqlite")


MEMCPY_HEADER = ("Duration (ns),Start (ns),Src Kind,Dst Kind,Bytes (MB),PID,Device ID,Context ID,Green Context ID,"
                 "Stream ID,API Name")
GOLDEN = {
    "cuda_memcpy_async": [MEMCPY_HEADER, "20,10,Pageable,Device,1.000,1000,0,1,,7,cudaMemcpyAsync_v3020"],
    "cuda_memcpy_sync": [MEMCPY_HEADER, "40,110,Device,Pageable,4.194,1000,0,1,,7,cudaMemcpy_v3020",
                         "3,183,Pageable,Device,0.066,1000,0,1,,7,cudaMemcpy_v3020"],
    "cuda_memset_sync": [
        "Duration (ns),Start (ns),Memory Kind,Bytes (MB),PID,Device ID,Context ID,Green Context ID,Stream ID,API Name",
        "20,205,Pinned,0.004,1000,0,1,2,7,cudaMemset_v3020"],
    "cuda_api_sync": ["Duration (ns),Start (ns),PID,TID,API Name",
                      "400000000,305,1000,7,cudaDeviceSynchronize_v3020",
                      "299999600,400000400,1000,8,cudaStreamSynchronize_v3020"],
    "gpu_gaps": ["Row#,Duration (ns),Start (ns),PID,Device ID,Context ID", "1,700000000,400,1000,0,3"],
    "gpu_time_util": ["Row#,In-Use (%),Duration (ns),Start (ns),PID,Device ID,Context ID",
                      "1,0.0,50,250,2000,0,5",  # chunks of 10 ns: five idle ones at 250
                      "2,0.0,700000990,10,1000,0,1"],  # every chunk of process 1000 is idle but for ~800 ns
}


@pytest.mark.parametrize("rule", list(GOLDEN))
def test_golden_csv(report, rule):
    run = run_cli("analyze", "-r", rule, "--format", "csv", report)
    assert run.code == 0, run.err
    assert run.out.splitlines() == GOLDEN[rule]


def test_export_without_memory_kind_names(report):
    """An export without ENUM_CUDA_MEM_KIND: Nsight's numbering (0 Pageable, 1 Pinned, 2 Device)."""
    nsight_numbering(report, keep_enumeration=False)
    for rule in ("cuda_memcpy_async", "cuda_memcpy_sync", "cuda_memset_sync"):
        assert run_cli("analyze", "-r", rule, "--format", "csv", report).out.splitlines() == GOLDEN[rule]


def test_gpu_starvation_is_gpu_gaps(report):
    """The Analysis Guide calls nsys analyze's gpu_gaps "GPU Starvation": the same rule."""
    run = run_cli("analyze", "-r", "gpu_starvation", "--format", "csv", report)
    assert run.code == 0, run.err
    assert run.out.splitlines() == GOLDEN["gpu_gaps"]


@pytest.mark.parametrize("rule, lines", [
    ("gpu_gaps:gap=0.00004", ["1,700000000,400,1000,0,3", "2,50,60,1000,0,1", "3,50,250,2000,0,5",
                              "4,45,265,1000,0,1"]),  # 60: the memcpy ending then; 250: the kernel [150,250)
    ("gpu_gaps:gap=0.00004:rows=2", ["1,700000000,400,1000,0,3", "2,50,60,1000,0,1"]),
    ("gpu_gaps:gap=700", []),  # 700 ms exactly is not longer than 700 ms
    # chunks of 50 ns over [100,400]: 100%, 200% (overlap counts twice), 100%, 0%, 100%, 100%
    ("gpu_time_util:chunks=6:threshold=101", ["1,0.0,700000990,10,1000,0,1", "2,75.0,200,200,2000,0,5",
                                             "3,100.0,50,100,2000,0,5"]),
    ("gpu_gaps:gap=0.00004:end=1000", ["1,50,60,1000,0,1", "2,50,250,2000,0,5", "3,45,265,1000,0,1"]),
    ("cuda_memcpy_sync:start=150", GOLDEN["cuda_memcpy_sync"][2:]),  # operations starting at 150 or later
    ("cuda_memcpy_sync:end=149", []),  # ... or ending by 149
    ("cuda_api_sync:start=306", GOLDEN["cuda_api_sync"][2:]),
    ("cuda_api_sync:thread=8", ["299999600,400000400,1000,8,cudaStreamSynchronize_v3020"]),
    ("cuda_api_sync:process=2000", []),
    ("cuda_api_sync:rows=-1", GOLDEN["cuda_api_sync"][1:]),
    ("cuda_api_sync:rows=1", GOLDEN["cuda_api_sync"][1:2]),
])
def test_options(report, rule, lines):
    run = run_cli("analyze", "-r", rule, "--format", "csv", report)
    assert run.code == 0, run.err
    assert run.out.splitlines()[1:] == lines


@pytest.mark.parametrize("option", ["chunks=0", "chunks=1001", "rows=-2", "threshold=-1"])
def test_bad_options(report, option):
    run = run_cli("analyze", "-r", f"gpu_time_util:{option}", report)
    assert run.code == 2 and "gpu_time_util" in run.err and option.split("=")[0] in run.err


def test_analyze_rules_are_not_stats_rules(report):
    run = run_cli("stats", "-r", "gpu_gaps", report)
    assert run.code == 2 and "asys analyze" in run.err


def test_missing_data_is_one_line(tmp_path):
    writer = ReportWriter(tmp_path / "report.sqlite", NSYS)
    writer.add("runtime", start=[0], end=[1], globalTid=GPID | TID, nameId=[writer.string("cudaFree_v3020")])
    writer.close()
    for rule in ("cuda_memcpy_async", "cuda_memset_sync", "gpu_gaps", "gpu_time_util"):
        run = run_cli("analyze", "-r", rule, writer.path)  # as nsys: one SKIPPED line, and on (D37)
        assert run.code == 0 and run.out == "" and run.err.startswith(f"SKIPPED: {writer.path} does not contain ")
        assert len(run.err.strip().splitlines()) == 1, run.err


def test_column_format(report):
    """NVIDIA's console table: a missing green context is blank."""
    run = run_cli("analyze", "-r", "cuda_memcpy_async", "--format", "column", report)
    assert run.code == 0, run.err
    assert "Green Context ID" in run.out and "cudaMemcpyAsync_v3020" in run.out


# Brute-force references --------------------------------------------------------------------------------

API_NAMES = ["cudaMemcpy_v3020", "cudaMemcpyAsync_v3020", "cudaMemcpy2DAsync_v3020", "cudaMemcpyPeer_v4000",
             "cudaMemset_v3020", "cudaMemsetAsync_v3020", "cudaMemset2D_v3020", "cudaDeviceSynchronize_v3020",
             "cudaStreamSynchronize_v3020", "cudaEventSynchronize_v3020", "cuMemcpyAsync"]
OPERATIONS = st.lists(st.tuples(st.sampled_from(API_NAMES), st.integers(1, 1000), st.integers(0, 300),
                                st.integers(0, 4), st.integers(0, 4), st.sampled_from([1, 2, 8]),
                                st.integers(60_000, 70_000)), min_size=1, max_size=25)
LABELS = {0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed"}


def write_operations(path, operations):
    """One call per operation (correlation id = index + 1), each launching a memcpy and a memset."""
    writer = ReportWriter(path, NSYS)
    ids = writer.strings([name for name, *_ in operations])
    count = len(operations)
    starts = [start for _, start, *_ in operations]
    ends = [start + length for _, start, length, *_ in operations]
    writer.add("runtime", start=starts, end=ends, globalTid=GPID | TID, nameId=ids,
               correlationId=list(range(1, count + 1)))
    common = dict(start=starts, end=ends, deviceId=0, contextId=1, streamId=7, globalPid=GPID,
                  correlationId=list(range(1, count + 1)), bytes=[op[6] for op in operations])
    writer.add("memcpy", **common, srcKind=[op[3] for op in operations], dstKind=[op[4] for op in operations],
               copyKind=[op[5] for op in operations])
    writer.add("memset", **common, memKind=[op[3] for op in operations])
    writer.close()
    return nsight_numbering(writer.path)


def csv_rows(rule, path):
    run = run_cli("analyze", "-r", f"{rule}:rows=-1", "--format", "csv", path)
    assert run.code == 0, run.err
    return list(csv.DictReader(io.StringIO(run.out)))


def expected(operations, flagged):
    """(duration, start, API name) of the flagged operations, longest first, ties by start."""
    found = [(length, start, name) for name, start, length, *rest in operations if flagged(name, *rest)]
    return sorted(found, key=lambda row: (-row[0], row[1]))


def printed(rows):
    return [(int(r["Duration (ns)"]), int(r["Start (ns)"]), r["API Name"]) for r in rows]


REFERENCES = {
    "cuda_memcpy_async": lambda name, src, dst, kind, size: name.lower().startswith("cudamemcpy")
    and "async" in name.lower() and PAGEABLE in (src, dst),
    "cuda_memcpy_sync": lambda name, src, dst, kind, size: name.lower().startswith("cudamemcpy")
    and "async" not in name.lower() and not (kind == HOST_TO_DEVICE and size <= 65536),
    "cuda_memset_sync": lambda name, src, dst, kind, size: name.lower().startswith("cudamemset")
    and "async" not in name.lower() and src in (PINNED, 4),
    "cuda_api_sync": lambda name, *rest: name.startswith(("cudaDeviceSynchronize", "cudaStreamSynchronize")),
}


@pytest.mark.parametrize("rule", list(REFERENCES))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(operations=[("cudaMemcpy_v3020", 1, 0, 0, 0, 2, 60_000), ("cudaMemcpy_v3020", 1, 0, 0, 1, 1, 60_000)])
@given(operations=OPERATIONS)
def test_operation_rules_against_brute_force(tmp_path_factory, rule, operations):
    """Random calls and the memcpy and memset they launch: each rule lists exactly the operations
    NVIDIA's definition flags (memory kinds by Nsight's numbering), in order, with their kinds."""
    path = write_operations(tmp_path_factory.mktemp("ops") / "ops.sqlite", operations)
    rows = csv_rows(rule, path)
    want = expected(operations, REFERENCES[rule])
    got = printed(rows)
    assert sorted(got, key=lambda row: (-row[0], row[1])) == got
    assert sorted(got) == sorted(want)
    if rule != "cuda_api_sync":  # each row's kinds are its operation's (operations may share start and name)
        kind_columns = ("Src Kind", "Dst Kind") if "memcpy" in rule else ("Memory Kind",)
        kinds = sorted((int(row["Start (ns)"]), row["API Name"], *(row[c] for c in kind_columns)) for row in rows)
        assert kinds == sorted((start, name, *(LABELS[k] for k in rest[:len(kind_columns)]))
                               for name, start, _, *rest in operations if REFERENCES[rule](name, *rest))


GPU_OPS = st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1), st.integers(0, 2000), st.integers(0, 300)),
                   min_size=1, max_size=25)  # (process, device, start, length)


def write_gpu_ops(path, ops):
    writer = ReportWriter(path, NSYS)
    kernel = writer.string("k")
    writer.add("kernels", start=[op[2] for op in ops], end=[op[2] + op[3] for op in ops],
               deviceId=[op[1] for op in ops], globalPid=[(op[0] + 1) << 24 for op in ops], contextId=1,
               correlationId=list(range(len(ops))), demangledName=kernel, shortName=kernel)
    writer.close()
    return writer.path


def brute_gaps(ops, longer_than, first=1, last=10**9):
    """Per (pid, device): the runs of idle nanoseconds between the first start and the last end,
    cut at every zero-length operation inside them."""
    found = []
    for key in sorted({(op[0], op[1]) for op in ops}):
        intervals = [(s, s + n) for p, d, s, n in ops if (p, d) == key and max(first, 1) <= s and s + n <= last]
        if not intervals:
            continue
        lo, hi = min(s for s, _ in intervals), max(e for _, e in intervals)
        busy = {t for s, e in intervals for t in range(s, e)}
        points = {s for s, e in intervals if s == e}
        t = lo
        while t < hi:
            if t in busy:
                t += 1
                continue
            run_start = t
            while t < hi and t not in busy:
                t += 1
            edges = [run_start] + sorted(p for p in points if run_start < p < t) + [t]
            found.extend((b - a, a, key[0] + 1, key[1]) for a, b in zip(edges, edges[1:]))
    return sorted((g for g in found if g[0] > longer_than), key=lambda g: (-g[0], g[1], g[2], g[3]))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=GPU_OPS, gap=st.integers(0, 100), first=st.integers(0, 500), last=st.integers(1000, 2500))
def test_gpu_gaps_against_brute_force(tmp_path_factory, ops, gap, first, last):
    """Idle stretches longer than ``gap`` ns between the operations of each process and device (those
    starting after 0, and from ``start`` to ``end``), a zero-length operation splitting one, by
    counting idle nanoseconds."""
    path = write_gpu_ops(tmp_path_factory.mktemp("gaps") / "gaps.sqlite", ops)
    run = run_cli("analyze", "-r", f"gpu_gaps:rows=-1:gap={gap / 1e6:.6f}:start={first}:end={last}", "--format",
                  "csv", path)
    assert run.code == 0, run.err
    rows = list(csv.DictReader(io.StringIO(run.out)))
    got = [(int(r["Duration (ns)"]), int(r["Start (ns)"]), int(r["PID"]), int(r["Device ID"])) for r in rows]
    assert got == brute_gaps(ops, gap, first, last)
    assert [int(r["Row#"]) for r in rows] == list(range(1, len(rows) + 1))


def brute_time_util(ops, threshold, chunks):
    """Per (pid, device): NVIDIA's chunks, each op's overlap summed per chunk, low runs merged."""
    found = []
    for key in sorted({(op[0], op[1]) for op in ops}):
        intervals = [(s, s + n) for p, d, s, n in ops if (p, d) == key and s > 0]
        if not intervals:
            continue
        lo, hi = min(s for s, _ in intervals), max(e for _, e in intervals)
        if hi <= lo:
            continue
        size = math.ceil((hi - lo) / chunks)
        runs: list[list[tuple[int, int, int]]] = []
        previous = False
        for index in range(chunks):
            start, end = lo + index * size, min(lo + (index + 1) * size, hi)
            if start >= end:
                break
            busy = sum(max(0, min(e, end) - max(s, start)) for s, e in intervals)
            low = busy * 100 < threshold * (end - start)
            if low:
                if not previous:
                    runs.append([])
                runs[-1].append((start, end, busy))
            previous = low
        for run in runs:
            length = run[-1][1] - run[0][0]
            average = math.floor(sum(b for *_, b in run) * 1000 / length + 0.5) / 10
            found.append((average, length, run[0][0], key[0] + 1, key[1]))
    return sorted(found, key=lambda r: (r[0], r[1], r[2], r[3], r[4]))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=GPU_OPS, threshold=st.integers(0, 150), chunks=st.integers(1, 40))
def test_gpu_time_util_against_brute_force(tmp_path_factory, ops, threshold, chunks):
    path = write_gpu_ops(tmp_path_factory.mktemp("util") / "util.sqlite", ops)
    run = run_cli("analyze", "-r", f"gpu_time_util:rows=-1:threshold={threshold}:chunks={chunks}", "--format", "csv",
                  path)
    assert run.code == 0, run.err
    rows = list(csv.DictReader(io.StringIO(run.out)))
    got = [(float(r["In-Use (%)"]), int(r["Duration (ns)"]), int(r["Start (ns)"]), int(r["PID"]),
            int(r["Device ID"])) for r in rows]
    assert got == brute_time_util(ops, threshold, chunks)


# The corpus ------------------------------------------------------------------------------------------------

RULES = ("cuda_memcpy_async", "cuda_memcpy_sync", "cuda_memset_sync", "cuda_api_sync", "gpu_gaps", "gpu_time_util")


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_runs(path):
    """Every rule on every Nsight export: a table, or nsys's one SKIPPED line saying which data is absent."""
    for rule in RULES:
        run = run_cli("analyze", "-r", rule, "--format", "csv", path)
        assert run.code == 0, (rule, run.err)
        if run.err.startswith("SKIPPED: "):
            assert run.out == "" and len(run.err.strip().splitlines()) == 1 and "does not contain" in run.err
        else:
            assert run.out.splitlines()[0].startswith(("Duration (ns)", "Row#")), rule


def test_help_rules_lists_the_nsys_analyze_family():
    lines = run_cli("analyze", "--help-rules").out.splitlines()
    nsys = lines.index("The nsys analyze reports (NVIDIA's names, columns and formats, as `nsys analyze` prints them):")
    names = [line.split()[0] if line.startswith("    ") else line for line in lines]
    assert names.index("ppu_gaps") < nsys < names.index("gpu_gaps")


# The corpus against direct SQL -------------------------------------------------------------------------------

PAGEABLE_SQL = "(SELECT id FROM ENUM_CUDA_MEM_KIND WHERE label = 'Pageable')"
OPERATION_SQL = """
    SELECT o.end - o.start, o.start, s.value FROM {table} AS o
    JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r
      ON r.correlationId = o.correlationId AND (r.globalTid >> 24) & 16777215 = (o.globalPid >> 24) & 16777215
    JOIN StringIds AS s ON s.id = r.nameId
    WHERE {condition}"""
SQL = {
    "cuda_memcpy_async": OPERATION_SQL.format(
        table="CUPTI_ACTIVITY_KIND_MEMCPY", condition=f"s.value LIKE 'cudaMemcpy%Async%' AND (o.srcKind IN "
        f"{PAGEABLE_SQL} OR o.dstKind IN {PAGEABLE_SQL})"),
    "cuda_memcpy_sync": OPERATION_SQL.format(
        table="CUPTI_ACTIVITY_KIND_MEMCPY", condition="s.value LIKE 'cudaMemcpy%' AND s.value NOT LIKE '%async%' "
        "AND NOT (o.copyKind IN (SELECT id FROM ENUM_CUDA_MEMCPY_OPER WHERE label = 'Host-to-Device') "
        "AND o.bytes <= 65536)"),
    "cuda_memset_sync": OPERATION_SQL.format(
        table="CUPTI_ACTIVITY_KIND_MEMSET", condition="s.value LIKE 'cudaMemset%' AND s.value NOT LIKE '%async%' "
        "AND o.memKind IN (SELECT id FROM ENUM_CUDA_MEM_KIND WHERE label IN ('Pinned', 'Managed'))"),
    "cuda_api_sync": """SELECT r.end - r.start, r.start, s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r
        JOIN StringIds AS s ON s.id = r.nameId
        WHERE s.value LIKE 'cudaDeviceSynchronize%' OR s.value LIKE 'cudaStreamSynchronize%'""",
}
GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")


def sql_rows(path, query):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute(query).fetchall()
    except sqlite3.OperationalError as error:  # a table the export lacks: the rule says so (test_corpus_runs)
        assert "no such table" in str(error)
        return None
    finally:
        con.close()


@pytest.mark.parametrize("path", corpus_params())
@pytest.mark.parametrize("rule", list(SQL))
def test_corpus_operations_equal_sql(path, rule):
    """Every CUDA rule lists, on every corpus export, the operations a direct SQL reading of NVIDIA's
    definition selects (duration, start, API name)."""
    want = sql_rows(path, SQL[rule])
    if want is None:
        pytest.skip("the export lacks a table of the rule")
    run = run_cli("analyze", "-r", f"{rule}:rows=-1", "--format", "csv", path)
    assert run.code == 0, run.err
    got = printed(list(csv.DictReader(io.StringIO(run.out))))
    assert sorted(got) == sorted(want)


def gaps_sql(tables, longer_than):
    """Gaps by a running maximum of ends over the operations ordered by start, per process and device."""
    ops = " UNION ALL ".join(f"SELECT start, end, (globalPid >> 24) & 16777215 AS pid, deviceId FROM {t} "
                             "WHERE start > 0 AND end >= start" for t in tables)
    return f"""WITH ops AS ({ops}),
        ordered AS (SELECT start, pid, deviceId, MAX(end) OVER (PARTITION BY pid, deviceId ORDER BY start, end
                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS busy_until FROM ops)
        SELECT start - busy_until, busy_until, pid, deviceId FROM ordered
        WHERE start > busy_until AND start - busy_until > {longer_than}"""


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_gaps_equal_sql(path):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    tables = [t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'") if t in GPU_TABLES]
    con.close()
    if not tables:
        pytest.skip("no GPU operations")
    want = sql_rows(path, gaps_sql(tables, 10_000))
    run = run_cli("analyze", "-r", "gpu_gaps:rows=-1:gap=0.01", "--format", "csv", path)
    assert run.code == 0, run.err
    got = [(int(r["Duration (ns)"]), int(r["Start (ns)"]), int(r["PID"]), int(r["Device ID"]))
           for r in csv.DictReader(io.StringIO(run.out))]
    assert sorted(got) == sorted(want)


def test_asysrep_reads_hggc_calls(writer):
    """On asysrep the same tables, the calls HGGC's: a pageable async copy and a device synchronisation
    (memory kinds in CUPTI's numbering, 1 Pageable, 3 Device, as its ENUM_HGGC_MEM_KIND names them)."""
    copy, sync = writer.strings(["hggcMemcpyAsync", "hggcDeviceSynchronize"])
    writer.add("runtime", start=[0, 50], end=[5, 90], globalTid=GPID | TID, nameId=[copy, sync], correlationId=[1, 2])
    writer.add("memcpy", start=[10], end=[30], deviceId=0, contextId=1, streamId=7, correlationId=[1], globalPid=GPID,
               bytes=[1_000_000], copyKind=[HOST_TO_DEVICE], srcKind=[1], dstKind=[3])
    writer.close()
    assert run_cli("analyze", "-r", "cuda_memcpy_async", "--format", "csv", writer.path).out.splitlines()[1:] == \
        ["20,10,Pageable,Device,1.000,1000,0,1,,7,hggcMemcpyAsync"]
    assert run_cli("analyze", "-r", "cuda_api_sync", "--format", "csv", writer.path).out.splitlines()[1:] == \
        ["40,50,1000,7,hggcDeviceSynchronize"]
