"""nsys's run options under NVIDIA's report names: ``--timeunit`` (every column in ns shown in
another unit) and ``--filter-nvtx`` (``--filter-hgtx`` with nsys's ``/count``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import run_cli
from asysstats.core.errors import AsysError
from asysstats.reading.schema import NSYS
from asysstats.synth.writer import ReportWriter
from asysstats.writing.nsys import TIME_UNIT_NAMES, time_unit


def kernels_report(tmp_path):
    """Two kernel names and three NVTX ranges 'step' on the launching thread.

    time (ns)   0      1000       2500  3000      5000   6000      8000
    step        [0 .......... 2500)     [3000 ....... 6000)  [6000 .. 8000)
    launches    0 (k1)     1000 (k1)            5000 (k2)      7000 (k2)
    kernels     [10,1234)  [1100,2100)          [5001,5501)    [7001,8001)
    """
    writer = ReportWriter(tmp_path / "r.sqlite", dialect=NSYS)
    k1, k2, launch = writer.strings(["k1", "k2", "cudaLaunchKernel"])
    writer.add("kernels", start=[10, 1100, 5001, 7001], end=[1234, 2100, 5501, 8001], deviceId=0,
               demangledName=[k1, k1, k2, k2], shortName=[k1, k1, k2, k2], correlationId=[1, 2, 3, 4],
               globalPid=1 << 24)
    writer.add("runtime", start=[0, 1000, 5000, 7000], end=[5, 1005, 5005, 7005], globalTid=(1 << 24) | 1,
               nameId=launch, correlationId=[1, 2, 3, 4])
    writer.add("hgtx", start=[0, 3000, 6000], end=[2500, 6000, 8000], eventType=59, text="step",
               globalTid=(1 << 24) | 1)
    writer.close()
    return writer.path


def csv_lines(*args) -> list[str]:
    run = run_cli("stats", *args)
    assert run.code == 0, run.err
    return run.out.splitlines()


def test_timeunit_renames_and_divides_every_time_column(tmp_path):
    report = kernels_report(tmp_path)
    assert csv_lines("-r", "cuda_gpu_kern_sum", "--timeunit", "usec", "--format", "csv", report) == [
        "Time (%),Total Time (us),Instances,Avg (us),Med (us),Min (us),Max (us),StdDev (us),Name",
        "59.7,2.224,2,1.112,1.112,1.000,1.224,0.158,k1",  # 1224 + 1000 ns; sqrt(2 * 112^2) = 158.4 ns
        "40.3,1.500,2,0.750,0.750,0.500,1.000,0.354,k2",
    ]
    assert csv_lines("-r", "cuda_gpu_kern_sum", "--timeunit", "sec", "--format", "csv", report)[1] == \
        "59.7,0.000002224,2,0.000001112,0.000001112,0.000001000,0.000001224,0.000000158,k1"
    ms = csv_lines("-r", "cuda_gpu_kern_sum", "--timeunit", "milli", "--format", "column", report)
    assert ms[0].split() == ["Time", "(%)", "Total", "Time", "(ms)", "Instances", "Avg", "(ms)", "Med", "(ms)",
                             "Min", "(ms)", "Max", "(ms)", "StdDev", "(ms)", "Name"]
    assert ms[2].split() == ["59.7", "0.002224", "2", "0.001112", "0.001112", "0.001000", "0.001224", "0.000158", "k1"]
    assert csv_lines("-r", "cuda_gpu_kern_sum", "--timeunit", "nsec", "--format", "csv", report)[1] == \
        "59.7,2224,2,1112.0,1112.0,1000,1224,158.4,k1"


def test_timeunit_in_json_and_xlsx(tmp_path):
    report = kernels_report(tmp_path)
    run = run_cli("stats", "-r", "cuda_gpu_kern_sum", "--timeunit", "us", "--format", "json", report)
    assert run.code == 0 and '"Total Time (us)": 2.224' in run.out and '"Avg (us)": 1.112' in run.out
    out = tmp_path / "out"
    run = run_cli("stats", "-r", "cuda_gpu_kern_sum", "--timeunit", "us", "--format", "xlsx", "-o", str(out), report)
    assert run.code == 0, run.err
    import openpyxl

    sheet = openpyxl.load_workbook(tmp_path / "out_cuda_gpu_kern_sum.xlsx").active
    total = [cell.value for cell in sheet[1]].index("Total Time (us)") + 1
    assert sheet.cell(2, total).value == pytest.approx(2.224) and sheet.cell(2, total).number_format == "#,##0.000"


@pytest.mark.parametrize("text, unit", [("us", "usec"), ("u", "usec"), ("micro", "usec"), ("milli", "msec"),
                                        ("ms", "msec"), ("s", "seconds"), ("sec", "seconds"), ("n", "nsec"),
                                        ("NANOSECONDS", "nsec")])
def test_timeunit_takes_a_prefix_naming_one_unit(text, unit):
    assert time_unit(text) == unit


@pytest.mark.parametrize("text", ["m", "mi", "", "minutes", "ks"])
def test_timeunit_refuses_a_prefix_of_several_or_none(text):
    with pytest.raises(AsysError, match="--timeunit"):
        time_unit(text)


@given(st.sampled_from(sorted(TIME_UNIT_NAMES)), st.integers(1, 12))
@settings(max_examples=40, deadline=None)
def test_every_prefix_of_one_unit_alone_names_it(name, length):
    prefix = name[:length]
    others = {unit for full, unit in TIME_UNIT_NAMES.items() if full.startswith(prefix)}
    if len(others) == 1:
        assert time_unit(prefix) == TIME_UNIT_NAMES[name]
    else:
        with pytest.raises(AsysError):
            time_unit(prefix)


def test_timeunit_is_refused_for_asys_rules(tmp_path):
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--timeunit", "us", kernels_report(tmp_path))
    assert run.code == 2 and "rule 'hggc_ppu_kern_sum'" in run.err and run.err.count("\n") == 1


def test_filter_nvtx_is_filter_hgtx_with_a_count(tmp_path):
    """step/1 is [3000, 6000): k2 at 5001 only; step/1/2 spans [3000, 8000): both k2; step/0/3: all."""
    report = kernels_report(tmp_path)
    rows = {spec: [line.rsplit(",", 1)[1] + ":" + line.split(",")[2]
                   for line in csv_lines("-r", "cuda_gpu_kern_sum", "--filter-nvtx", spec, "--format", "csv",
                                         report)[1:]]
            for spec in ("step/1", "step/1/2", "step/0/3", "step")}
    assert rows == {"step/1": ["k2:1"], "step/1/2": ["k2:2"], "step/0/3": ["k1:2", "k2:2"], "step": ["k1:2"]}
    same = csv_lines("-r", "cuda_gpu_kern_sum", "--filter-hgtx", "step/1", "--format", "csv", report)
    assert same == csv_lines("-r", "cuda_gpu_kern_sum", "--filter-nvtx", "step/1", "--format", "csv", report)


@pytest.mark.parametrize("args, message", [
    (("--filter-nvtx", "step/2/2"), "--filter-nvtx: NVTX range 'step' has 3 instance(s), 2 from index 2 is out"),
    (("--filter-nvtx", "stop"), "--filter-nvtx: r.sqlite has no NVTX range named 'stop' (nearest: step)"),
    (("--filter-nvtx", "step/0/0"), "--filter-nvtx: the count"),
    (("--filter-hgtx", "step/0/2"), "--filter-hgtx: r.sqlite has no HGTX range named 'step/0'"),  # no count there
    (("--filter-nvtx", "step", "--filter-hgtx", "step"), "name one filter: give one"),
])
def test_filter_nvtx_errors_name_the_option(tmp_path, args, message):
    run = run_cli("stats", "-r", "cuda_gpu_kern_sum", *args, kernels_report(tmp_path))
    assert run.code == 2 and message in run.err and run.err.count("\n") == 1, run.err


def test_timeunit_keeps_missing_cells_missing(tmp_path):
    """A kernel that starts before its launch call returns has no queue time: an empty cell in every
    unit (the missing-integer marker is not divided as a number).

    call [0, 5)    kernel [10, 1234)   -> queue 5 ns
    call [1000, 1005) kernel [1100, 2100) -> queue 95 ns; 5000: kernel [5001, 5501) starts first -> none
    """
    lines = csv_lines("-r", "cuda_kern_exec_trace", "--timeunit", "us", "--format", "csv", kernels_report(tmp_path))
    header = lines[0].split(",")
    queue = [line.split(",")[header.index("Queue Dur (us)")] for line in lines[1:]]
    assert queue == ["0.005", "0.095", "", ""]
