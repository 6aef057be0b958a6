"""nsys stats' unified memory reports per address and per instruction (rulebook/nsys_runtimes.py: um_sum,
um_cpu_page_faults_sum): NVIDIA's CSV on a hand-made export, brute-force properties, and a run on every
export of the corpus against SQL."""

from __future__ import annotations

import csv
import io
import sqlite3

import pytest
from conftest import corpus_params, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asysstats.reading.schema import NSYS
from asysstats.synth.writer import NULL, ReportWriter

PID = 1000 << 24
UM_HEADER = ("Virtual Address,HtoD Migration size (MB),DtoH Migration size (MB),CPU Page Faults,GPU Page Faults,"
             "Migration Throughput (MBps)")
CPU_HEADER = "CPU Page Faults,CPU Instruction Address"
A, B, C, D = 0x7F0000200000, 0x7F0000000000, 0x7F0000400000, 0x7F0000600000


def build(writer: ReportWriter):
    """Unified memory migrations and faults at four addresses, and a migration without its address.

    time (ns)    0 ...... 200,000   300,000 .. 306,000   400,000 ...... 600,000
    HtoD  A      [ 2 MiB ]                                                          also B: 4 KiB [1,000, 1,400)
    DtoH  A                          [64 KiB]                                       no address: 1,000 B HtoD
    DtoH  C                                              [    2 MiB    ]            [2,000, 2,100)
    a pageable HtoD copy of 1 MB at 700,000 (not a migration)
    CPU faults   B by main+0x10 (x2), A by alloc+0x8, D by init+0x4
    GPU faults   A: 4 pages, D: 1 page
    """
    writer.add("memcpy", start=[0, 300_000, 400_000, 1_000, 2_000, 700_000],
               end=[200_000, 306_000, 600_000, 1_400, 2_100, 800_000], deviceId=0, copyKind=[11, 12, 12, 11, 11, 1],
               bytes=[2 * 2 ** 20, 65536, 2 * 2 ** 20, 4096, 1000, 1_000_000],
               virtualAddress=[A, A, C, B, NULL, NULL], globalPid=PID)
    main, init, alloc = writer.strings(["main+0x10", "init+0x4", "alloc+0x8"])  # ids unlike the texts' order
    writer.add("um_cpu_faults", start=[1, 2, 3, 4], address=[B, B, A, D], CpuInstruction=[main, main, alloc, init],
               module=writer.string("a.out"), globalPid=PID)
    writer.add("um_gpu_faults", start=[5, 6], end=[6, 7], address=[A, D], numberOfPageFaults=[4, 1], deviceId=0,
               globalPid=PID)
    writer.close()
    return writer.path


GOLDEN = {
    "um_sum": [
        UM_HEADER,
        "0x7F0000200000,2.097,0.066,1,4,10498.485",  # (2 MiB + 64 KiB) over 206,000 ns
        "0x7F0000400000,0.000,2.097,0,0,10485.760",
        "0x7F0000000000,0.004,0.000,2,0,10240.000",
        ",0.001,0.000,0,0,10000.000",  # the migration without its address: SQL's NULL group
        "0x7F0000600000,0.000,0.000,1,1,",  # faults alone: no migration time, no throughput
    ],
    "um_cpu_page_faults_sum": [
        CPU_HEADER,
        "2,main+0x10",
        "1,alloc+0x8",  # a tie: by the instruction's text, not its string id
        "1,init+0x4",
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


@pytest.mark.parametrize("rows, shown", [("2", 2), ("-1", 5), ("0", 0)])
def test_um_sum_rows(nsys_writer, rows, shown):
    run = run_cli("stats", "-r", f"um_sum:rows={rows}", "--format", "csv", build(nsys_writer))
    assert run.code == 0 and run.out.splitlines() == GOLDEN["um_sum"][:1 + shown]


def test_um_sum_rows_default_ten(nsys_writer):
    """Ten rows unless told (the Analysis Guide's default): twelve addresses print ten, the largest."""
    nsys_writer.add("memcpy", start=list(range(12)), end=list(range(1, 13)), deviceId=0, copyKind=11,
                    bytes=[1000 * (size + 1) for size in range(12)], virtualAddress=[4096 * i for i in range(12)],
                    globalPid=PID)
    nsys_writer.close()
    rows = csv_rows("um_sum", nsys_writer.path)
    assert [row["Virtual Address"] for row in rows] == [f"0x{4096 * i:X}" for i in range(11, 1, -1)]


def test_um_sum_bad_rows(nsys_writer):
    run = run_cli("stats", "-r", "um_sum:rows=-2", build(nsys_writer))
    assert run.code == 2 and "um_sum" in run.err and "rows" in run.err and len(run.err.strip().splitlines()) == 1


@pytest.mark.parametrize("rule", ["um_sum", "um_cpu_page_faults_sum"])
def test_missing_tables_in_nvidia_words(nsys_writer, rule):
    nsys_writer.add("runtime", start=[0], end=[1], globalTid=PID | 1, nameId=[nsys_writer.string("cudaFree")])
    nsys_writer.close()
    words = "GPU memory data" if rule == "um_sum" else "CUDA Unified Memory CPU page faults data"
    run = run_cli("stats", "-r", rule, nsys_writer.path)  # as nsys: a SKIPPED line, and on (D37)
    assert run.code == 0 and run.err == f"SKIPPED: {nsys_writer.path} does not contain {words}.\n"


def csv_rows(rule: str, path) -> list[dict[str, str]]:
    run = run_cli("stats", "-r", rule, "--format", "csv", path)
    assert run.code == 0, run.err
    return list(csv.DictReader(io.StringIO(run.out)))


ADDRESSES = st.sampled_from([NULL, 0x1000, 0x2000, 0x7F0000000000])
COPIES = st.lists(st.tuples(st.sampled_from([1, 11, 12, 13]), st.integers(1, 10 ** 7), ADDRESSES,
                            st.integers(0, 10 ** 6)), max_size=20)
FAULTS = st.lists(st.tuples(st.booleans(), ADDRESSES.filter(lambda a: a != NULL), st.integers(1, 9)), max_size=20)


def brute_force_um(copies, faults) -> list[tuple]:
    """Per address (None: a migration without one) its sums, the most migrated first, ties by address."""
    sums: dict = {}
    for kind, size, address, duration in copies:
        if kind in (11, 12):
            entry = sums.setdefault(None if address == NULL else address, [0, 0, 0, 0, 0])
            entry[0 if kind == 11 else 1] += size
            entry[4] += duration
    for on_cpu, address, count in faults:
        entry = sums.setdefault(address, [0, 0, 0, 0, 0])
        entry[2 if on_cpu else 3] += 1 if on_cpu else count
    return sorted(((address, *entry) for address, entry in sums.items()),
                  key=lambda row: (-(row[1] + row[2]), -1 if row[0] is None else row[0]))


def check_um_rows(rows: list[dict[str, str]], expected: list[tuple]) -> None:
    assert len(rows) == len(expected)
    for row, (address, htod, dtoh, cpu, gpu, duration) in zip(rows, expected):
        assert row["Virtual Address"] == ("" if address is None else f"0x{address:X}")
        assert float(row["HtoD Migration size (MB)"]) == pytest.approx(htod / 1e6, abs=0.0005)
        assert float(row["DtoH Migration size (MB)"]) == pytest.approx(dtoh / 1e6, abs=0.0005)
        assert (int(row["CPU Page Faults"]), int(row["GPU Page Faults"])) == (cpu, gpu)
        throughput = row["Migration Throughput (MBps)"]
        if duration:
            assert float(throughput) == pytest.approx((htod + dtoh) * 1e3 / duration, rel=1e-9, abs=0.0005)
        else:
            assert throughput == ""


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(COPIES, FAULTS)
def test_um_sum_against_brute_force(tmp_path_factory, copies, faults):
    """Random copies (kind, bytes, address or none, duration) and faults (CPU or GPU, address, count) at a
    few shared addresses: every address's sums and throughput, in order."""
    writer = ReportWriter(tmp_path_factory.mktemp("um") / "um.sqlite", NSYS)
    writer.create("memcpy")
    if copies:
        starts = [10 ** 7 * i for i in range(len(copies))]
        writer.add("memcpy", start=starts, end=[start + c[3] for start, c in zip(starts, copies)], deviceId=0,
                   copyKind=[c[0] for c in copies], bytes=[c[1] for c in copies],
                   virtualAddress=[c[2] for c in copies], globalPid=PID)
    cpu = [address for on_cpu, address, _ in faults if on_cpu]
    gpu = [(address, count) for on_cpu, address, count in faults if not on_cpu]
    writer.create("um_cpu_faults")
    writer.create("um_gpu_faults")
    if cpu:
        writer.add("um_cpu_faults", start=list(range(len(cpu))), address=cpu, CpuInstruction=0, module=0,
                   globalPid=PID)
    if gpu:
        writer.add("um_gpu_faults", start=list(range(len(gpu))), end=list(range(1, len(gpu) + 1)),
                   address=[a for a, _ in gpu], numberOfPageFaults=[c for _, c in gpu], deviceId=0, globalPid=PID)
    writer.close()
    check_um_rows(csv_rows("um_sum:rows=-1", writer.path), brute_force_um(copies, faults))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["main+0x10", "init+0x4", "alloc+0x8", "memset"]), min_size=1, max_size=30))
def test_cpu_faults_against_brute_force(tmp_path_factory, instructions):
    """Random CPU faults by a few instructions: per instruction its count, the most first, ties by text."""
    writer = ReportWriter(tmp_path_factory.mktemp("cpu") / "cpu.sqlite", NSYS)
    writer.add("um_cpu_faults", start=list(range(len(instructions))), address=0x1000,
               CpuInstruction=[writer.string(text) for text in instructions], module=0, globalPid=PID)
    writer.close()
    counts = {text: instructions.count(text) for text in set(instructions)}
    expected = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    rows = csv_rows("um_cpu_page_faults_sum", writer.path)
    assert [(row["CPU Instruction Address"], int(row["CPU Page Faults"])) for row in rows] == expected


# The corpus: every export runs both reports to a table or to nsys's one-line SKIPPED note; where the export
# holds the tables, every row equals SQLite's own computation (csc746_vecadd_1t: 18,432 unified copies at
# 12,288 addresses, no fault tables; pipit_saxpy_mpi: empty fault tables; mordred_q and openacc_nn_r20: copies
# without the virtualAddress column, all of one NULL address).
UM_SQL = """
SELECT a, sum(h), sum(d), sum(c), sum(g), sum(t) FROM (
  SELECT {address} AS a, CASE copyKind WHEN 11 THEN bytes ELSE 0 END AS h,
         CASE copyKind WHEN 12 THEN bytes ELSE 0 END AS d, 0 AS c, 0 AS g, end - start AS t
  FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind IN (11, 12)
  {faults})
GROUP BY a ORDER BY sum(h) + sum(d) DESC, a
"""
CPU_FAULTS_SQL = "UNION ALL SELECT address, 0, 0, 1, 0, 0 FROM CUDA_UM_CPU_PAGE_FAULT_EVENTS"
GPU_FAULTS_SQL = "UNION ALL SELECT address, 0, 0, 0, numberOfPageFaults, 0 FROM CUDA_UM_GPU_PAGE_FAULT_EVENTS"


def tables_of(path) -> set[str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        return {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


@pytest.mark.parametrize("report", corpus_params())
def test_corpus_um_sum_equals_sql(report):
    present = tables_of(report)
    run = run_cli("stats", "-r", "um_sum:rows=-1", "--format", "csv", report)
    if "CUPTI_ACTIVITY_KIND_MEMCPY" not in present:
        assert run.code == 0 and run.err.endswith("does not contain GPU memory data.\n")
        return
    assert run.code == 0, run.err
    faults = " ".join(sql for table, sql in (("CUDA_UM_CPU_PAGE_FAULT_EVENTS", CPU_FAULTS_SQL),
                                             ("CUDA_UM_GPU_PAGE_FAULT_EVENTS", GPU_FAULTS_SQL)) if table in present)
    with sqlite3.connect(f"file:{report}?mode=ro", uri=True) as con:
        columns = {row[1] for row in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_MEMCPY)")}
        address = "virtualAddress" if "virtualAddress" in columns else "NULL"
        expected = con.execute(UM_SQL.format(address=address, faults=faults)).fetchall()
    check_um_rows(list(csv.DictReader(io.StringIO(run.out))), expected)


@pytest.mark.parametrize("report", corpus_params())
def test_corpus_cpu_faults_equal_sql(report):
    run = run_cli("stats", "-r", "um_cpu_page_faults_sum", "--format", "csv", report)
    if "CUDA_UM_CPU_PAGE_FAULT_EVENTS" not in tables_of(report):
        assert run.code == 0 and run.err.endswith("does not contain CUDA Unified Memory CPU page faults data.\n")
        return
    assert run.code == 0, run.err
    with sqlite3.connect(f"file:{report}?mode=ro", uri=True) as con:
        expected = con.execute("SELECT count(*) FROM CUDA_UM_CPU_PAGE_FAULT_EVENTS GROUP BY CpuInstruction "
                               "ORDER BY count(*) DESC").fetchall()
    rows = list(csv.DictReader(io.StringIO(run.out)))
    assert [int(row["CPU Page Faults"]) for row in rows] == [count for (count,) in expected]
