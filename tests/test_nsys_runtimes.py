"""The nsys stats reports of OpenACC, OpenMP and unified memory (rulebook/nsys_runtimes.py): NVIDIA's CSV
on hand-made exports, brute-force properties, and a run on every export of the corpus against SQL."""

from __future__ import annotations

import csv
import io
import sqlite3
from decimal import ROUND_HALF_UP, Decimal

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import corpus_params, run_cli
from asysstats.reading.schema import NSYS, OPENMP_EVENT_KINDS
from asysstats.synth.writer import NULL, ReportWriter
from test_nsys_corpus import STATISTICS_SQL, in_order, printed_statistics
from test_nsys_stats import check_against

CALL_HEADER = "Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name"
TOTALS_HEADER = ("Total HtoD Migration Size (MB),Total DtoH Migration Size (MB),Total CPU Page Faults,"
                 "Total GPU PageFaults,Minimum Virtual Address,Maximum Virtual Address")
DATA, LAUNCH, OTHER = 0, 1, 2  # the OpenACC tables, in the order of the "openacc" TableSpec
PARALLEL, SYNC_REGION_WAIT, TASK = (OPENMP_EVENT_KINDS.index(kind) for kind in ("PARALLEL", "SYNC_REGION_WAIT",
                                                                                 "TASK"))
TID = (1000 << 24) | 1


def build(writer: ReportWriter):
    """OpenACC, OpenMP and unified memory, each in several of its tables.

    OpenACC   data    Enter Data@main.c:10 [0,40) [100,120)    Wait@main.c:12 [40,70)
              launch  Compute Construct@main.c:12 [45,95)     Enqueue Launch@main.c:12 [50,80): ties with Wait
              other   Device Init (no source file) [0,5)
    OpenMP    parallel  Parallel region [0,100) [200,260)
              task      Task [10,40)      sync region wait  Barrier wait [60,90): ties with Task
    UM        memcpy  Unified HtoD 2 MiB @0x7F0000200000, 4 KiB @0x7F0000000000; Unified DtoH 64 KiB
                      @0x7F0000400000; a pageable HtoD copy of 1 MB (no migration)
              faults  CPU @0x7F0000001000 x2, @0x7F0000401000; GPU 4 @0x7F0000200000, 1 @0x7F0000600000
    """
    wait, enter, construct, launch, init = writer.strings(["Wait", "Enter Data", "Compute Construct",
                                                           "Enqueue Launch", "Device Init"])
    main = writer.string("main.c")
    writer.add_to("openacc", DATA, start=[0, 100, 40], end=[40, 120, 70], nameId=[enter, enter, wait],
               srcFile=main, lineNo=[10, 10, 12], globalTid=TID, eventKind=[11, 11, 7])
    writer.add_to("openacc", LAUNCH, start=[45, 50], end=[95, 80], nameId=[construct, launch], srcFile=main,
               lineNo=12, globalTid=TID, eventKind=[9, 4])
    writer.add_to("openacc", OTHER, start=[0], end=[5], nameId=[init], srcFile=NULL, lineNo=0, globalTid=TID,
               eventKind=1)
    task, barrier, parallel = writer.strings(["Task", "Barrier wait", "Parallel region"])
    writer.add_to("openmp", PARALLEL, start=[0, 200], end=[100, 260], nameId=parallel, globalTid=TID)
    writer.add_to("openmp", TASK, start=[10], end=[40], nameId=task, globalTid=TID)
    writer.add_to("openmp", SYNC_REGION_WAIT, start=[60], end=[90], nameId=barrier, globalTid=TID)
    writer.add("memcpy", start=[0, 10, 20, 30], end=[5, 15, 25, 35], deviceId=0, copyKind=[11, 11, 12, 1],
               bytes=[2 * 2 ** 20, 4096, 65536, 1_000_000],
               virtualAddress=[0x7F0000200000, 0x7F0000000000, 0x7F0000400000, NULL], globalPid=1000 << 24)
    writer.add("um_cpu_faults", start=[1, 2, 3], address=[0x7F0000001000, 0x7F0000401000, 0x7F0000001000],
               globalPid=1000 << 24)
    writer.add("um_gpu_faults", start=[4, 6], end=[5, 7], address=[0x7F0000200000, 0x7F0000600000],
               numberOfPageFaults=[4, 1], deviceId=0, globalPid=1000 << 24)
    writer.close()
    return writer.path


GOLDEN = {
    "openacc_sum": [
        CALL_HEADER,
        "34.3,60,2,30.0,30.0,20,40,14.1,Enter Data@main.c:10",  # sample deviation: sqrt(200 / 1)
        "28.6,50,1,50.0,50.0,50,50,0.0,Compute Construct@main.c:12",
        "17.1,30,1,30.0,30.0,30,30,0.0,Enqueue Launch@main.c:12",  # a tie: by name, not by string id
        "17.1,30,1,30.0,30.0,30,30,0.0,Wait@main.c:12",
        "2.9,5,1,5.0,5.0,5,5,0.0,Device Init",
    ],
    "openmp_sum": [
        CALL_HEADER,
        "72.7,160,2,80.0,80.0,60,100,28.3,Parallel region",
        "13.6,30,1,30.0,30.0,30,30,0.0,Task",  # a tie: by string id, as nsys groups by it
        "13.6,30,1,30.0,30.0,30,30,0.0,Barrier wait",
    ],
    "um_total_sum": [
        TOTALS_HEADER,
        "2.101,0.066,3,5,0x7F0000000000,0x7F0000600000",  # 2 MiB + 4 KiB; 64 KiB; 4 + 1 GPU faults
    ],
}


@pytest.fixture
def nsys_writer(tmp_path):
    return ReportWriter(tmp_path / "report.sqlite", NSYS)


@pytest.mark.parametrize("rule", list(GOLDEN))
def test_golden_csv(nsys_writer, rule):
    run = run_cli("stats", "-r", rule, "--format", "csv", build(nsys_writer))
    assert run.code == 0, run.err
    assert run.out.splitlines() == GOLDEN[rule]


def test_console(nsys_writer):
    run = run_cli("stats", "-r", "um_total_sum", "--format", "column", build(nsys_writer))
    assert run.out.splitlines()[2].split() == ["2.101", "0.066", "3", "5", "0x7F0000000000", "0x7F0000600000"]


@pytest.mark.parametrize("rule, words", [
    ("openacc_sum", "does not contain OpenACC event data."),
    ("openmp_sum", "does not contain OpenMP event data."),
    ("um_total_sum", "does not contain GPU memory data."),
])
def test_missing_tables_in_nvidia_words(nsys_writer, rule, words):
    nsys_writer.add("runtime", start=[0], end=[1], globalTid=TID, nameId=[nsys_writer.string("cudaFree")])
    nsys_writer.close()
    run = run_cli("stats", "-r", rule, nsys_writer.path)  # as nsys: a SKIPPED line, and on (D37)
    assert run.code == 0 and run.err == f"SKIPPED: {nsys_writer.path} {words}\n"


def test_asysrep_lacks_the_tables(writer):
    writer.add("runtime", start=[0], end=[1], globalTid=TID, nameId=[writer.string("hgFree")])
    writer.close()
    run = run_cli("stats", "-r", "openacc_sum", writer.path)
    assert run.code == 0 and run.err == f"SKIPPED: {writer.path} does not contain OpenACC event data.\n"


def test_um_totals_without_faults(nsys_writer):
    """Migrations without fault tables (a prefetching program): no faults, the copies' addresses (D35)."""
    nsys_writer.add("memcpy", start=[0], end=[5], deviceId=0, copyKind=12, bytes=3_000_000,
                    virtualAddress=0x10000, globalPid=1000 << 24)
    nsys_writer.close()
    run = run_cli("stats", "-r", "um_total_sum", "--format", "csv", nsys_writer.path)
    assert run.out.splitlines()[1] == "0.000,3.000,0,0,0x10000,0x10000"


def test_um_totals_of_nothing(nsys_writer):
    """Only ordinary copies: no migration, no fault, no row (docs/decisions.md D35); faults without an
    address-holding copy: zero migrated, the faults' addresses."""
    nsys_writer.add("memcpy", start=[0], end=[5], deviceId=0, copyKind=1, bytes=10, globalPid=1000 << 24)
    nsys_writer.close()
    run = run_cli("stats", "-r", "um_total_sum", "--format", "csv", nsys_writer.path)
    assert run.code == 0 and run.out.splitlines() == [TOTALS_HEADER]
    nsys_writer.add("um_gpu_faults", start=[0], end=[1], address=0xA000, numberOfPageFaults=2, deviceId=0,
                    globalPid=1000 << 24)
    nsys_writer.close()
    run = run_cli("stats", "-r", "um_total_sum", "--format", "csv", nsys_writer.path)
    assert run.out.splitlines()[1] == "0.000,0.000,0,2,0xA000,0xA000"


EVENTS = st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["Wait", "Update"]), st.integers(1, 3),
                            st.integers(0, 10_000), st.integers(0, 5_000)), min_size=1, max_size=30)


def csv_rows(rule: str, path) -> list[dict[str, str]]:
    run = run_cli("stats", "-r", rule, "--format", "csv", path)
    assert run.code == 0, run.err
    return list(csv.DictReader(io.StringIO(run.out)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(EVENTS)
def test_openacc_against_brute_force(tmp_path_factory, events):
    """Random OpenACC events (table, name, line, start, duration) spread over the three tables: per
    ``name@file:line`` the statistics of their durations."""
    writer = ReportWriter(tmp_path_factory.mktemp("acc") / "acc.sqlite", NSYS)
    source = writer.string("loop.f90")
    for table, name, line, start, duration in events:
        writer.add_to("openacc", table, start=[start], end=[start + duration], nameId=[writer.string(name)],
                   srcFile=source, lineNo=line, globalTid=TID, eventKind=0)
    writer.close()
    by_name: dict[str, list[int]] = {}
    for _, name, line, _, duration in events:
        by_name.setdefault(f"{name}@loop.f90:{line}", []).append(duration)
    check_against(csv_rows("openacc_sum", writer.path), by_name)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(EVENTS)
def test_openmp_against_brute_force(tmp_path_factory, events):
    """Random OpenMP events over three of the OPENMP_EVENT_KIND_* tables: per name the statistics."""
    writer = ReportWriter(tmp_path_factory.mktemp("omp") / "omp.sqlite", NSYS)
    for table, name, _, start, duration in events:
        writer.add_to("openmp", (PARALLEL, TASK, SYNC_REGION_WAIT)[table], start=[start],
                   end=[start + duration], nameId=[writer.string(name)], globalTid=TID)
    writer.close()
    by_name: dict[str, list[int]] = {}
    for _, name, _, _, duration in events:
        by_name.setdefault(name, []).append(duration)
    check_against(csv_rows("openmp_sum", writer.path), by_name)


COPIES = st.lists(st.tuples(st.sampled_from([1, 2, 11, 12, 13]), st.integers(1, 10 ** 7), st.integers(1, 2 ** 47)),
                  min_size=1, max_size=20)
FAULTS = st.lists(st.tuples(st.booleans(), st.integers(1, 2 ** 47), st.integers(1, 9)), max_size=20)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(COPIES, FAULTS)
@example([(11, 89_500, 1), (12, 2_500, 2)], [])  # MB on a half: 0.0895 -> 0.090, 0.0025 -> 0.003
def test_um_totals_against_brute_force(tmp_path_factory, copies, faults):
    """Random copies (kind, bytes, address) and faults (CPU or GPU, address, count): the migrated
    bytes of the unified kinds 11 and 12 only (MB to three decimals, the exact decimal a half away
    from zero, docs/decisions.md D2), the faults, the extreme addresses of both."""
    writer = ReportWriter(tmp_path_factory.mktemp("um") / "um.sqlite", NSYS)
    writer.add("memcpy", start=list(range(len(copies))), end=list(range(1, len(copies) + 1)), deviceId=0,
               copyKind=[kind for kind, _, _ in copies], bytes=[size for _, size, _ in copies],
               virtualAddress=[address for _, _, address in copies], globalPid=1000 << 24)
    cpu = [address for on_cpu, address, _ in faults if on_cpu]
    gpu = [(address, count) for on_cpu, address, count in faults if not on_cpu]
    writer.create("um_cpu_faults")
    writer.create("um_gpu_faults")
    if cpu:
        writer.add("um_cpu_faults", start=list(range(len(cpu))), address=cpu, globalPid=1000 << 24)
    if gpu:
        writer.add("um_gpu_faults", start=list(range(len(gpu))), end=list(range(1, len(gpu) + 1)),
                   address=[a for a, _ in gpu], numberOfPageFaults=[c for _, c in gpu], deviceId=0,
                   globalPid=1000 << 24)
    writer.close()
    rows = csv_rows("um_total_sum", writer.path)
    migrated = [address for kind, _, address in copies if kind in (11, 12)]
    addresses = migrated + cpu + [a for a, _ in gpu]
    assert len(rows) == int(bool(addresses))
    if not rows:
        return
    row = rows[0]
    for column, kind in (("Total HtoD Migration Size (MB)", 11), ("Total DtoH Migration Size (MB)", 12)):
        moved = Decimal(sum(size for copied, size, _ in copies if copied == kind)).scaleb(-6)
        assert Decimal(row[column]) == moved.quantize(Decimal("0.001"), ROUND_HALF_UP)
    assert (int(row["Total CPU Page Faults"]), int(row["Total GPU PageFaults"])) == (len(cpu), sum(c for _, c in gpu))
    expected = (f"0x{min(addresses):X}", f"0x{max(addresses):X}")
    assert (row["Minimum Virtual Address"], row["Maximum Virtual Address"]) == expected


# The corpus: every export runs each report to a table or to nsys's one-line SKIPPED note, and
# the statistics equal SQLite's own computation where the export holds the tables (pipit_saxpy_mpi holds
# them empty; csc746_vecadd_1t holds 18,432 unified memory copies and no fault tables).
SQL_ROWS = {
    "openacc_sum": [f"SELECT nameId || '/' || coalesce(srcFile, '') || '/' || lineNo AS k, end - start AS v "
                    f"FROM CUPTI_ACTIVITY_KIND_OPENACC_{kind}" for kind in ("DATA", "LAUNCH", "OTHER")],
    "openmp_sum": [f"SELECT nameId AS k, end - start AS v FROM OPENMP_EVENT_KIND_{kind}" for kind in OPENMP_EVENT_KINDS],
}


def tables_of(path) -> set[str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        return {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


@pytest.mark.parametrize("report", corpus_params())
@pytest.mark.parametrize("rule", list(SQL_ROWS))
def test_corpus_statistics_equal_sql(report, rule):
    present = tables_of(report)
    selects = [s for s in SQL_ROWS[rule] if s.rsplit(" FROM ", 1)[1] in present]
    run = run_cli("stats", "-r", rule, "--format", "csv", report)
    if not selects:
        assert run.code == 0 and run.err.startswith("SKIPPED: ") and len(run.err.strip().splitlines()) == 1
        return
    assert run.code == 0, run.err
    with sqlite3.connect(f"file:{report}?mode=ro", uri=True) as con:
        con.create_function("sqrt", 1, lambda x: None if x is None else x ** 0.5)
        expected = con.execute(STATISTICS_SQL.format(rows=" UNION ALL ".join(selects))).fetchall()
    got = in_order(printed_statistics(run.out, rule), 1)
    assert len(got) == len(expected)
    for mine, theirs in zip(got, in_order(expected, 1)):
        assert all(abs(a - b) <= 0.05 + 1e-6 for a, b in zip(mine, theirs)), (mine, theirs)


UM_SQL = """
SELECT (SELECT coalesce(sum(bytes), 0) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 11),
       (SELECT coalesce(sum(bytes), 0) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 12),
       {cpu}, {gpu}
"""


@pytest.mark.parametrize("report", corpus_params())
def test_corpus_um_totals_equal_sql(report):
    present = tables_of(report)
    run = run_cli("stats", "-r", "um_total_sum", "--format", "csv", report)
    if "CUPTI_ACTIVITY_KIND_MEMCPY" not in present:
        assert run.code == 0 and run.err.endswith("does not contain GPU memory data.\n")
        return
    assert run.code == 0, run.err
    rows = list(csv.DictReader(io.StringIO(run.out)))
    cpu = "(SELECT count(*) FROM CUDA_UM_CPU_PAGE_FAULT_EVENTS)" if "CUDA_UM_CPU_PAGE_FAULT_EVENTS" in present else "0"
    gpu = ("(SELECT coalesce(sum(numberOfPageFaults), 0) FROM CUDA_UM_GPU_PAGE_FAULT_EVENTS)"
           if "CUDA_UM_GPU_PAGE_FAULT_EVENTS" in present else "0")
    with sqlite3.connect(f"file:{report}?mode=ro", uri=True) as con:
        htod, dtoh, cpu_faults, gpu_faults = con.execute(UM_SQL.format(cpu=cpu, gpu=gpu)).fetchone()
    assert len(rows) == int(bool(htod or dtoh or cpu_faults or gpu_faults))  # no row without any
    if not rows:
        return
    row = rows[0]
    assert float(row["Total HtoD Migration Size (MB)"]) == pytest.approx(htod / 1e6, abs=0.0005)
    assert float(row["Total DtoH Migration Size (MB)"]) == pytest.approx(dtoh / 1e6, abs=0.0005)
    assert (int(row["Total CPU Page Faults"]), int(row["Total GPU PageFaults"])) == (cpu_faults, gpu_faults)
