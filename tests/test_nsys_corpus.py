"""The rules that mirror ``nsys stats`` on the Nsight corpus: the tables nsys printed for the
corpus' authors (``*.stats/``), and a direct SQL computation on every export."""

from __future__ import annotations

import csv
import io
import re
import sqlite3

import pytest

from conftest import NSYS_CORPUS, corpus_params, run_cli

EXECUTING = re.compile(r"Executing '(\w+)' stats report")


def printed_tables(path) -> dict[str, list[str]]:
    """The lines of each table an nsys log printed (heading, dashes, rows), by report name; the
    blank lines between rows that the log holds (a copy through a web page) are left out."""
    tables: dict[str, list[str]] = {}
    report = None
    for line in path.read_text(encoding="utf-8").splitlines():
        found = EXECUTING.search(line)
        if found:
            report = found.group(1)
            tables[report] = []
        elif report and line.startswith(" ") and line.strip():
            tables[report].append(line)
        elif report and line.strip() and tables[report]:
            report = None  # the next section's title ("CUDA Kernel Statistics:", "Generated:")
    return {name: lines for name, lines in tables.items() if lines}


def cells(lines: list[str]) -> list[list[str]]:
    """The cells of a printed table's rows, cut where its line of dashes cuts the columns
    (thousands separators dropped from numbers)."""
    spans = [match.span() for match in re.finditer(r"-+", lines[1])]
    rows = []
    for line in lines[2:]:
        row = [line[start:stop].strip() for start, stop in spans[:-1]] + [line[spans[-1][0]:].strip()]
        rows.append([cell.replace(",", "") if re.fullmatch(r"[\d,.]+", cell) else cell for cell in row])
    return rows


def ours(rule: str, report, fmt: str = "column") -> str:
    run = run_cli("stats", "-r", rule, "--format", fmt, report)
    assert run.code == 0, run.err
    return run.out


FUSER = NSYS_CORPUS / "fuser_hopper_r1.stats" / "nsys-log.txt"
VECADD = NSYS_CORPUS / "csc746_vecadd_1t.stats" / "vecadd_gpu_1t.txt"


@pytest.mark.skipif(not FUSER.is_file(), reason="../shared/corpus/nsys is absent")
@pytest.mark.parametrize("rule", ["nvtx_sum", "cuda_api_sum", "cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum",
                                  "cuda_gpu_mem_size_sum"])
def test_fuser_console_is_identical(rule):
    """nsys 2024.6 printed these tables: ours are the same lines, character for character
    (headings, widths, numbers, names cut at 100 characters, row order)."""
    printed = printed_tables(FUSER)[rule]
    assert ours(rule, NSYS_CORPUS / "fuser_hopper_r1.sqlite").splitlines() == printed


# What nsys 2022.2 printed otherwise than nsys 2024 prints, and so we: its names of the unified
# memory copies (nsys 2024 names every copy '[CUDA memcpy <ENUM_CUDA_MEMCPY_OPER label>]').
VECADD_2022_NAMES = {"[CUDA Unified Memory memcpy HtoD]": "[CUDA memcpy Unified Host-to-Device]",
                     "[CUDA Unified Memory memcpy DtoH]": "[CUDA memcpy Unified Device-to-Host]"}


@pytest.mark.skipif(not VECADD.is_file(), reason="../shared/corpus/nsys is absent")
@pytest.mark.parametrize("name", ["cudaapisum", "gpukernsum", "gpumemtimesum", "gpumemsizesum"])
def test_vecadd_2022_values_are_identical(name):
    """nsys 2022.2 printed these tables under its report names (our aliases). Every number, name
    and the row order are ours; what differs is nsys 2022's, not 2024's: thousands separators,
    lines padded with spaces to the table's width, a title line before each table
    ('CUDA API Statistics:'), and the names of unified memory copies (VECADD_2022_NAMES)."""
    printed = printed_tables(VECADD)[name]
    assert all(len(line) == len(printed[1]) for line in printed)  # 2022: padded; 2024 (and we): trailing spaces cut
    mine = ours(name, NSYS_CORPUS / "csc746_vecadd_1t.sqlite").splitlines()
    assert re.split(r"\s{2,}", mine[0].strip()) == re.split(r"\s{2,}", printed[0].strip())
    expected = [[VECADD_2022_NAMES.get(cell, cell) for cell in row] for row in cells(printed)]
    assert cells(mine) == expected


# The direct SQL computation of each report: a group key ``k`` and a value ``v`` per row of an export.
SQL_ROWS = {
    "cuda_gpu_kern_sum": ["SELECT demangledName AS k, end - start AS v FROM CUPTI_ACTIVITY_KIND_KERNEL"],
    "cuda_api_sum": ["SELECT nameId AS k, end - start AS v FROM CUPTI_ACTIVITY_KIND_RUNTIME",
                     "SELECT nameId AS k, end - start AS v FROM CUPTI_ACTIVITY_KIND_DRIVER"],
    "cuda_gpu_mem_time_sum": ["SELECT copyKind AS k, end - start AS v FROM CUPTI_ACTIVITY_KIND_MEMCPY",
                              "SELECT 'memset' AS k, end - start AS v FROM CUPTI_ACTIVITY_KIND_MEMSET"],
    "cuda_gpu_mem_size_sum": ["SELECT copyKind AS k, bytes AS v FROM CUPTI_ACTIVITY_KIND_MEMCPY",
                              "SELECT 'memset' AS k, bytes AS v FROM CUPTI_ACTIVITY_KIND_MEMSET"],
    "nvtx_sum": ["SELECT coalesce(text, textId) || '/' || eventType || '/' || coalesce(domainId, 0) || '/' || "
                 "(globalTid >> 24) AS k, end - start AS v FROM NVTX_EVENTS WHERE eventType IN (59, 60) "
                 "AND end IS NOT NULL"],
    "osrtsum": ["SELECT nameId AS k, end - start AS v FROM OSRT_API"],
}
STATISTICS_SQL = """
WITH rows AS ({rows}),
ranked AS (SELECT k, v, row_number() OVER (PARTITION BY k ORDER BY v) AS r, count(*) OVER (PARTITION BY k) AS n
           FROM rows),
means AS (SELECT k, avg(v) AS mean FROM rows GROUP BY k)
SELECT sum(v), count(*), avg(v),
       (SELECT avg(v) FROM ranked WHERE ranked.k = rows.k AND r IN ((n + 1) / 2, (n + 2) / 2)),
       min(v), max(v),
       CASE WHEN count(*) > 1 THEN sqrt(sum((v - mean) * (v - mean)) / (count(*) - 1)) ELSE 0.0 END
FROM rows JOIN means USING (k) GROUP BY k
"""


def sql_statistics(path, rule: str) -> list[tuple[float, ...]] | None:
    """Each group's (total, count, average, median, min, max, sample deviation), computed by SQLite;
    None when the export has none of the report's tables."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        tables = {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        selects = [s for s in SQL_ROWS[rule] if s.split(" FROM ")[1].split()[0] in tables]
        if not selects:
            return None
        rows = " UNION ALL ".join(selects)
        con.create_function("sqrt", 1, lambda x: None if x is None else x ** 0.5)
        return con.execute(STATISTICS_SQL.format(rows=rows)).fetchall()


def printed_statistics(text: str, rule: str) -> list[tuple[float, ...]]:
    """Our CSV's (total, count, average, median, min, max, deviation) of each row, in bytes for sizes."""
    table = list(csv.reader(io.StringIO(text)))
    header, rows = table[0], table[1:]
    first = header.index("Total (MB)") if "Total (MB)" in header else header.index("Total Time (ns)")
    scale = 10 ** 6 if "Total (MB)" in header else 1
    out = []
    for row in rows:
        total, count, mean, median, low, high, deviation = (float(cell) for cell in row[first:first + 7])
        out.append((total * scale, count, mean * scale, median * scale, low * scale, high * scale, deviation * scale))
    return out


def in_order(statistics: list[tuple[float, ...]], scale: float) -> list[tuple[float, ...]]:
    """Groups in an order that printing to the decimals keeps: total, count and median as printed."""
    return sorted(statistics, key=lambda group: (round(group[0] / scale, 3), group[1], round(group[3] / scale, 3)))


@pytest.mark.parametrize("report", corpus_params())
@pytest.mark.parametrize("rule", list(SQL_ROWS))
def test_statistics_equal_sql(report, rule):
    """Float average, median of the two middle values, sample deviation: as SQLite computes them
    on every export (each printed to its decimals: 0.05 ns, 500 bytes for MB)."""
    expected = sql_statistics(report, rule)
    if expected is None:
        pytest.skip(f"{report.name} has no table of {rule}")
    scale = 10 ** 6 if rule == "cuda_gpu_mem_size_sum" else 1
    got = in_order(printed_statistics(ours(rule, report, "csv"), rule), scale)
    tolerance = scale * 0.0005 + 1e-6 if scale > 1 else 0.05 + 1e-6
    assert len(got) == len(expected)
    for mine, theirs in zip(got, in_order(expected, scale)):
        assert mine[1] == theirs[1]
        assert all(abs(a - b) <= tolerance for a, b in zip(mine, theirs)), (mine, theirs)


CPU_ONLY = NSYS_CORPUS / "sc23omp_cpuonly.stats" / "term.txt"
SKIPPED = re.compile(r"^SKIPPED: (.+) does not contain (.+)\.$")


@pytest.mark.skipif(not CPU_ONLY.is_file(), reason="../shared/corpus/nsys is absent")
def test_cpu_only_export_skips_every_report_as_nsys_did():
    """nsys 2023.3 printed, for a CPU-only export, a SKIPPED line per report naming what the
    export lacks, and went on (exit 0): ours are the same lines, the path being ours."""
    printed = [SKIPPED.match(line) for line in CPU_ONLY.read_text(encoding="utf-8").splitlines()]
    expected = [found.group(2) for found in printed if found]
    report = NSYS_CORPUS / "sc23omp_cpuonly.sqlite"
    rules = [found.group(1) for found in map(EXECUTING.search, CPU_ONLY.read_text().splitlines()) if found]
    assert rules == ["nvtx_sum", "cuda_api_sum", "cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum"]
    run = run_cli("stats", "-r", ",".join(rules), report)
    assert run.code == 0 and run.out == ""
    lines = [SKIPPED.match(line) for line in run.err.splitlines()]
    assert all(lines) and [found.group(1) for found in lines] == [str(report)] * 5
    assert [found.group(2) for found in lines] == expected == [
        "NV Tools Extension (NVTX) data", "CUDA trace data", "CUDA kernel data", "GPU memory data",
        "GPU memory data"]


LEGACY = NSYS_CORPUS / "openacc_nn_r20.stats" / "failed_forward_prop.out"
# The legacy section titles of `nsys profile --stats=true` (before 2021) and our report names.
LEGACY_SECTIONS = {"CUDA API Statistics:": "cuda_api_sum", "CUDA Kernel Statistics:": "cuda_gpu_kern_sum",
                   "CUDA Memory Operation Statistics (by time):": "cuda_gpu_mem_time_sum",
                   "CUDA Memory Operation Statistics (by size in KiB):": "cuda_gpu_mem_size_sum"}
# What the legacy version printed otherwise than nsys 2024 (and we): its short copy names.
LEGACY_NAMES = {"[CUDA memcpy HtoD]": "[CUDA memcpy Host-to-Device]"}


def legacy_tables(path) -> dict[str, list[dict[str, str]]]:
    """Each legacy table's rows as {heading: cell}, numbers in the es-ES locale made plain
    (``25.369.833,0`` -> ``25369833.0``)."""
    tables: dict[str, list[dict[str, str]]] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    for at, line in enumerate(lines):
        if line.strip() not in LEGACY_SECTIONS:
            continue
        heading, dashes = lines[at + 2], lines[at + 3]
        spans = [found.span() for found in re.finditer(r"-+", dashes)]
        names = [heading[start:stop].strip() for start, stop in spans]
        rows = []
        for row in lines[at + 4:]:
            if not row.strip():
                break
            values = [row[start:stop].strip() for start, stop in spans]
            rows.append({name: value.replace(".", "").replace(",", ".") if re.fullmatch(r"[\d.,]+", value) else value
                         for name, value in zip(names, values)})
        tables[LEGACY_SECTIONS[line.strip()]] = rows
    return tables


def csv_rows(rule: str, report) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(ours(rule, report, "csv"))))


@pytest.mark.skipif(not LEGACY.is_file(), reason="../shared/corpus/nsys is absent")
@pytest.mark.parametrize("rule", list(LEGACY_SECTIONS.values()))
def test_legacy_openacc_values_are_identical(rule):
    """A pre-2021 nsys printed these tables (es-ES locale digits) for openacc_nn_r20. Every total,
    count, minimum, maximum, name and the row order are ours. What differs is the legacy
    version's: no median or deviation columns; Time(%) and Average cut to whole numbers (then
    printed ',0'); sizes in KiB, each statistic computed in bytes and cut to a whole KiB (total
    2,559,820 bytes printed 2.499,000; ours 2.560 MB); short copy names. The exact bytes are
    checked against SQL by test_statistics_equal_sql."""
    printed = legacy_tables(LEGACY)[rule]
    mine = csv_rows(rule, NSYS_CORPUS / "openacc_nn_r20.sqlite")
    name = "Operation" if "mem" in rule else "Name"
    assert [LEGACY_NAMES.get(row[name], row[name]) for row in printed] == [row[name] for row in mine]
    if rule == "cuda_gpu_mem_size_sum":
        for row, ours_row in zip(printed, mine):
            total, count, mean, low, high = (float(ours_row[c]) * 10 ** 6 for c in (
                "Total (MB)", "Count", "Avg (MB)", "Min (MB)", "Max (MB)"))
            assert int(row["Operations"]) == count / 10 ** 6
            kib = [float(row[c]) for c in ("Total", "Average", "Minimum", "Maximum")]
            # ours, printed to 1 kB (500 bytes either way), and the legacy cut to a whole KiB (up to 1 KiB less)
            assert all(-500 / 1024 <= value / 1024 - legacy < 1 + 500 / 1024
                       for legacy, value in zip(kib, (total, mean, low, high)))
        return
    count = "Instances" if rule == "cuda_gpu_kern_sum" else "Operations" if "mem" in rule else "Num Calls"
    our_count = "Count" if "mem" in rule else count
    for row, ours_row in zip(printed, mine):
        assert row["Total Time (ns)"] == ours_row["Total Time (ns)"]
        assert row[count] == ours_row[our_count]
        assert (row["Minimum"], row["Maximum"]) == (ours_row["Min (ns)"], ours_row["Max (ns)"])
        assert float(row["Average"]) == int(float(ours_row["Avg (ns)"]))
        assert float(row["Time(%)"]) == int(float(ours_row["Time (%)"]))
