"""``cuda_kern_exec_sum`` (rulebook/nsys_traces.py): NVIDIA's CSV on a hand-made Nsight export, a
brute-force property, and a direct SQL computation (runtime JOIN kernels ON correlationId) on the corpus."""

from __future__ import annotations

import csv
import io
import re
import sqlite3
import statistics

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import corpus_params, run_cli
from asysstats.reading.schema import NSYS
from asysstats.synth.writer import ReportWriter

PID = 1000
GLOBAL_PID = PID << 24
LETTERS = "TAQK"  # total, API, queue and kernel time
STATS = ("Avg", "Med", "Min", "Max", "StdDev")


def build(path):
    """One process on device 0; thread 1 and thread 2 launch ``add`` and ``mul`` (cudaLaunchKernel).

    thread 1   call [100,110) -> add [120,170)  queued 10             T 70  A 10  Q 10  K 50
               call [200,230) -> add [225,245)  starts before return  T 45  A 30  -     K 20
               call [300,340) -> mul [310,320)  ends before return    T 40  A 40  -     K 10
    thread 2   call [150,155) -> add [175,180)  queued 20             T 30  A  5  Q 20  K  5
               call [400,410) -> add [410,420)  queue 0: not counted  T 20  A 10  -     K 10
    a kernel no call launched (correlation id 99) is in no row.
    """
    writer = ReportWriter(path, NSYS)
    writer.add("runtime", start=[100, 200, 300, 150, 400], end=[110, 230, 340, 155, 410],
               globalTid=[GLOBAL_PID | 1] * 3 + [GLOBAL_PID | 2] * 2, correlationId=[1, 2, 3, 4, 5],
               nameId=writer.string("cudaLaunchKernel_v7000"))
    add, mul = writer.strings(["add(int*, int*, int*)", "mul(int*, int*, int*)"])
    writer.add("kernels", start=[120, 225, 310, 175, 410, 500], end=[170, 245, 320, 180, 420, 510], deviceId=0,
               contextId=1, streamId=7, correlationId=[1, 2, 3, 4, 5, 99], globalPid=GLOBAL_PID,
               demangledName=[add, add, mul, add, add, add], shortName=writer.strings(["add"] * 2 + ["mul"] + ["add"] * 3),
               mangledName=writer.strings(["_Z3addPiS_S_"] * 2 + ["_Z3mulPiS_S_"] + ["_Z3addPiS_S_"] * 3),
               gridX=1, gridY=1, gridZ=1, blockX=1, blockY=1, blockZ=1)
    writer.close()
    return writer.path


HEADER = "PID,TID,DevId,Count,QCount," + ",".join(f"{letter}{s} (ns)" for letter in LETTERS for s in STATS) + \
    ",API Name,Kernel Name"
GOLDEN = [  # by the total of total time descending: 115, 50, 40
    HEADER,
    # T 70, 45: sample deviation 25/sqrt(2) = 17.7; A 10, 30; Q 10 alone; K 50, 20
    '1000,1,0,2,1,57.5,57.5,45,70,17.7,20.0,20.0,10,30,14.1,10.0,10.0,10,10,0.0,35.0,35.0,20,50,21.2,'
    'cudaLaunchKernel,"add(int*, int*, int*)"',
    # T 30, 20; A 5, 10; Q 20 (the launch with queue 0 is not counted); K 5, 10
    '1000,2,0,2,1,25.0,25.0,20,30,7.1,7.5,7.5,5,10,3.5,20.0,20.0,20,20,0.0,7.5,7.5,5,10,3.5,'
    'cudaLaunchKernel,"add(int*, int*, int*)"',
    # no queued launch: empty Q cells
    '1000,1,0,1,0,40.0,40.0,40,40,0.0,40.0,40.0,40,40,0.0,,,,,,10.0,10.0,10,10,0.0,cudaLaunchKernel,'
    '"mul(int*, int*, int*)"',
]


def test_golden_csv(tmp_path):
    run = run_cli("stats", "-r", "cuda_kern_exec_sum", "--format", "csv", build(tmp_path / "report.sqlite"))
    assert run.code == 0, run.err
    assert run.out.splitlines() == GOLDEN


def test_nsys_2022_name_is_an_alias(tmp_path):
    run = run_cli("stats", "-r", "kernexecsum", "--format", "csv", build(tmp_path / "report.sqlite"))
    assert run.out.splitlines() == GOLDEN


@pytest.mark.parametrize("option, names", [("base", ["add", "add", "mul"]),
                                           ("mangled", ["_Z3addPiS_S_", "_Z3addPiS_S_", "_Z3mulPiS_S_"])])
def test_kernel_name_options(tmp_path, option, names):
    run = run_cli("stats", "-r", f"cuda_kern_exec_sum:{option}", "--format", "csv", build(tmp_path / "report.sqlite"))
    assert run.code == 0, run.err
    assert [row["Kernel Name"] for row in csv.DictReader(io.StringIO(run.out))] == names


def test_timeunit_keeps_empty_queue_cells(tmp_path):
    run = run_cli("stats", "-r", "cuda_kern_exec_sum", "--format", "csv", "--timeunit", "usec",
                  build(tmp_path / "report.sqlite"))
    assert run.code == 0, run.err
    rows = list(csv.DictReader(io.StringIO(run.out)))
    assert rows[2]["QMin (us)"] == rows[2]["QStdDev (us)"] == "" and rows[0]["TMin (us)"] == "0.045"


def test_missing_kernels_say_so(tmp_path):
    writer = ReportWriter(tmp_path / "calls.sqlite", NSYS)
    writer.add("runtime", start=[0], end=[1], globalTid=GLOBAL_PID | 1, correlationId=[1],
               nameId=writer.string("cudaMalloc_v3020"))
    writer.close()
    run = run_cli("stats", "-r", "cuda_kern_exec_sum", "--format", "csv", writer.path)
    assert run.code == 0 and run.out == "" and run.err.startswith(f"SKIPPED: {writer.path} does not contain ")


# Property against a brute-force reference ----------------------------------------------------------------

PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
LAUNCHES = st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 500), st.integers(-300, 300),
                              st.integers(1, 400), st.sampled_from([1, 2]), st.sampled_from(["cudaLaunchKernel_v7000",
                                                                                             "cuLaunchKernel"]),
                              st.sampled_from(["k", "j"]), st.booleans()), min_size=1, max_size=25)


def described(values: list[int]) -> tuple[float, float, int, int, float]:
    return (statistics.fmean(values), statistics.median(values), min(values), max(values),
            statistics.stdev(values) if len(values) > 1 else 0.0)


def close(cells: list[str], expected: tuple[float, ...]) -> bool:
    """Printed to one decimal (0.05 either way, and the float's binary rounding)."""
    return all(abs(float(cell) - value) <= 0.05 + 1e-9 * abs(value) for cell, value in zip(cells, expected, strict=True))


@PROPERTY
@given(LAUNCHES)
def test_against_brute_force(tmp_path_factory, launches):
    """Per launch (call start, call duration, kernel start offset from the call's end, kernel duration,
    thread, API, kernel, whether a kernel ran), grouped by thread, API (its _v suffix dropped) and kernel:
    the count, the launches with a positive queue, and the four times' statistics; rows by the total of
    total time descending."""
    path = tmp_path_factory.mktemp("exec") / "exec.sqlite"
    writer = ReportWriter(path, NSYS)
    ends = [start + length for start, length, *_ in launches]
    writer.add("runtime", start=[launch[0] for launch in launches], end=ends,
               globalTid=[GLOBAL_PID | launch[4] for launch in launches],
               correlationId=list(range(1, len(launches) + 1)), nameId=writer.strings([launch[5] for launch in launches]))
    ran = [i for i, launch in enumerate(launches) if launch[7]] or [0]
    kernel_starts = [max(0, ends[i] + launches[i][2]) for i in ran]
    kernel_ends = [start + launches[i][3] for start, i in zip(kernel_starts, ran)]
    writer.add("kernels", start=kernel_starts, end=kernel_ends, correlationId=[i + 1 for i in ran], deviceId=0,
               globalPid=GLOBAL_PID, demangledName=writer.strings([launches[i][6] for i in ran]), streamId=7,
               contextId=1, gridX=1, gridY=1, gridZ=1, blockX=1, blockY=1, blockZ=1)
    writer.close()
    groups: dict[tuple[str, str, str], dict[str, list[int]]] = {}
    for kernel_start, kernel_end, i in zip(kernel_starts, kernel_ends, ran):
        start, _, _, _, thread, api, kernel, _ = launches[i]
        times = groups.setdefault((str(thread), re.sub(r"_v[0-9]{4}$", "", api), kernel), {c: [] for c in LETTERS})
        times["T"].append(max(ends[i], kernel_end) - start)
        times["A"].append(ends[i] - start)
        times["K"].append(kernel_end - kernel_start)
        if kernel_start > ends[i]:
            times["Q"].append(kernel_start - ends[i])
    run = run_cli("stats", "-r", "cuda_kern_exec_sum", "--format", "csv", path)
    assert run.code == 0, run.err
    rows = list(csv.DictReader(io.StringIO(run.out)))
    assert sorted((row["TID"], row["API Name"], row["Kernel Name"]) for row in rows) == sorted(groups)
    totals = [int(row["Count"]) * float(row["TAvg (ns)"]) for row in rows]
    assert all(a >= b - 0.05 * int(row["Count"]) for a, b, row in zip(totals, totals[1:], rows[1:]))
    for row in rows:
        times = groups[(row["TID"], row["API Name"], row["Kernel Name"])]
        assert (row["PID"], row["DevId"]) == (str(PID), "0")
        assert (int(row["Count"]), int(row["QCount"])) == (len(times["T"]), len(times["Q"]))
        for letter in LETTERS:
            cells = [row[f"{letter}{s} (ns)"] for s in STATS]
            assert cells == [""] * 5 if not times[letter] else close(cells, described(times[letter])), (letter, row)


# The corpus: a direct SQL computation -------------------------------------------------------------------

LAUNCH_SQL = """
WITH every AS ({calls}),
calls AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY globalTid >> 24, correlationId ORDER BY start, end)
                         AS nth FROM every) WHERE nth = 1),
launches AS (
  SELECT ((c.globalTid >> 24) & 16777215) || char(31) || (c.globalTid & 16777215) || char(31) || k.deviceId
         || char(31) || c.nameId || char(31) || k.demangledName AS key,
         max(c.end, k.end) - c.start AS T, c.end - c.start AS A, k.start - c.end AS Q, k.end - k.start AS K
  FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
  JOIN calls AS c ON c.correlationId = k.correlationId AND (c.globalTid >> 24) = (k.globalPid >> 24)),
rows AS (SELECT key AS k, {letter} AS v FROM launches {where}),
ranked AS (SELECT k, v, row_number() OVER (PARTITION BY k ORDER BY v) AS r, count(*) OVER (PARTITION BY k) AS n
           FROM rows),
means AS (SELECT k, avg(v) AS mean FROM rows GROUP BY k)
SELECT k, count(*), avg(v),
       (SELECT avg(v) FROM ranked WHERE ranked.k = rows.k AND r IN ((n + 1) / 2, (n + 2) / 2)),
       min(v), max(v),
       CASE WHEN count(*) > 1 THEN sqrt(sum((v - mean) * (v - mean)) / (count(*) - 1)) ELSE 0.0 END
FROM rows JOIN means USING (k) GROUP BY k
"""
SEPARATOR = "\x1f"  # between the parts of a group's key (char(31): in no name)
CALL_TABLES = ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER")


def sql_launches(path) -> dict[str, dict[str, tuple[float, ...]]] | None:
    """Per letter, per (pid, tid, device, API name, kernel name) of the launches: (count, average, median,
    min, max, sample deviation), computed by SQLite; None without kernels. A kernel's launch is the earliest
    call of its process with its correlation id: pipit_saxpy_mpi's export holds two per kernel, a
    ``cudaLaunchKernel`` and, inside it, a ``cudaLaunchKernel_v7000`` (docs/decisions.md D33)."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        tables = {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "CUPTI_ACTIVITY_KIND_KERNEL" not in tables:
            return None
        calls = " UNION ALL ".join(f"SELECT start, end, globalTid, correlationId, nameId FROM {table}"
                                   for table in CALL_TABLES if table in tables)
        con.create_function("sqrt", 1, lambda x: None if x is None else x ** 0.5)
        names = dict(con.execute("SELECT id, value FROM StringIds"))
        out = {}
        for letter in LETTERS:
            query = LAUNCH_SQL.format(calls=calls, letter=letter, where="WHERE Q > 0" if letter == "Q" else "")
            found = con.execute(query).fetchall()
            out[letter] = {readable(key, names): values for key, *values in found}
            assert len(out[letter]) == len(found)  # no two API name ids print alike here
        return out


def readable(key: str, names: dict[int, str]) -> str:
    """The SQL key with the names' texts (the API name without its _v suffix), as our columns print them."""
    pid, tid, device, api, kernel = key.split(SEPARATOR)
    return SEPARATOR.join([pid, tid, device, re.sub(r"_v[0-9]{4}$", "", names[int(api)]), names[int(kernel)]])


@pytest.mark.parametrize("report", corpus_params())
def test_corpus_statistics_equal_sql(report):
    """Every export runs (a table, or nsys's SKIPPED line); on the exports with kernels each group's
    count and the four times' statistics are SQLite's (printed to 0.05 ns)."""
    run = run_cli("stats", "-r", "cuda_kern_exec_sum", "--format", "csv", report)
    assert run.code == 0, run.err
    expected = sql_launches(report)
    if expected is None:
        assert run.out == "" and run.err.startswith("SKIPPED: ") and len(run.err.strip().splitlines()) == 1
        return
    rows = list(csv.DictReader(io.StringIO(run.out)))
    assert len(rows) == len(expected["T"])
    for row in rows:
        key = SEPARATOR.join(row[c] for c in ("PID", "TID", "DevId", "API Name", "Kernel Name"))
        assert int(row["Count"]) == expected["T"][key][0]
        assert int(row["QCount"]) == (expected["Q"][key][0] if key in expected["Q"] else 0)
        for letter in LETTERS:
            cells = [row[f"{letter}{s} (ns)"] for s in STATS]
            if letter == "Q" and key not in expected["Q"]:
                assert cells == [""] * 5
                continue
            assert close(cells, tuple(expected[letter][key][1:])), (letter, key, cells, expected[letter][key])
