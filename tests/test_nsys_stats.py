"""The rules that mirror ``nsys stats`` (rulebook/nsys_stats.py): NVIDIA's CSV on hand-made reports,
the other formats, the aliases, and the asys rules unchanged beside them."""

from __future__ import annotations

import csv
import io
import statistics

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import run_cli
from asysstats.reading.schema import NSYS
from asysstats.synth.writer import ReportWriter

KERNEL_HEADER = "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name"
CALL_HEADER = "Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name"


def build(writer: ReportWriter):
    """Every table the six reports read, each with a group of several values.

    kernels   add [0,50) [200,260) [400,500)  mul [100,180)
    runtime   cudaLaunchKernel [0,10) [20,40)  cudaMalloc [50,120)  cudaFree [130,160): ties with the launches
    memcpy    HtoD [0,10) 1.5 MB, [20,50) 0.5 MB    memset [60,65) 4 bytes
    hgtx      push/pop a [0,100) > b [10,30)      start/end a [200,260)
    osrt      read [0,5) [10,25)  write [30,60)
    """
    add, mul = writer.strings(["_Z3addPiS_S_", "_Z3mulPiS_S_"])
    short_add, short_mul = writer.strings(["add", "mul"])
    demangled_add, demangled_mul = writer.strings(["add(int*, int*, int*)", "mul(int*, int*, int*)"])
    writer.add("kernels", start=[0, 100, 200, 400], end=[50, 180, 260, 500], deviceId=0,
               demangledName=[demangled_add, demangled_mul, demangled_add, demangled_add],
               shortName=[short_add, short_mul, short_add, short_add], mangledName=[add, mul, add, add],
               correlationId=[1, 2, 3, 4], globalPid=1000 << 24)
    launch, malloc, free = writer.strings(["cudaLaunchKernel", "cudaMalloc", "cudaFree"])
    writer.add("runtime", start=[0, 20, 50, 130], end=[10, 40, 120, 160], globalTid=(1000 << 24) | 1,
               nameId=[launch, launch, malloc, free], correlationId=[1, 2, 3, 4])
    writer.add("memcpy", start=[0, 20], end=[10, 50], deviceId=0, bytes=[1_500_000, 500_000], copyKind=1,
               globalPid=1000 << 24)
    writer.add("memset", start=[60], end=[65], deviceId=0, bytes=4, globalPid=1000 << 24)
    writer.add("hgtx", start=[0, 10, 200], end=[100, 30, 260], eventType=[59, 59, 60], text=["a", "b", "a"],
               globalTid=(1000 << 24) | 1)
    read, write = writer.strings(["read", "write"])
    writer.add("osrt", start=[0, 10, 30], end=[5, 25, 60], globalTid=(1000 << 24) | 1, nameId=[read, read, write])
    writer.close()
    return writer.path


GOLDEN = {
    "cuda_gpu_kern_sum": [
        KERNEL_HEADER,
        '72.4,210,3,70.0,60.0,50,100,26.5,"add(int*, int*, int*)"',  # sample deviation: sqrt(1400 / 2)
        '27.6,80,1,80.0,80.0,80,80,0.0,"mul(int*, int*, int*)"',
    ],
    "cuda_api_sum": [
        CALL_HEADER,
        "53.8,70,1,70.0,70.0,70,70,0.0,cudaMalloc",
        "23.1,30,2,15.0,15.0,10,20,7.1,cudaLaunchKernel",  # before cudaFree: the lower string id, as nsys groups
        "23.1,30,1,30.0,30.0,30,30,0.0,cudaFree",
    ],
    "cuda_gpu_mem_time_sum": [
        "Time (%),Total Time (ns),Count,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Operation",
        "88.9,40,2,20.0,20.0,10,30,14.1,[CUDA memcpy Host-to-Device]",
        "11.1,5,1,5.0,5.0,5,5,0.0,[CUDA memset]",
    ],
    "cuda_gpu_mem_size_sum": [
        "Total (MB),Count,Avg (MB),Med (MB),Min (MB),Max (MB),StdDev (MB),Operation",
        "2.000,2,1.000,1.000,0.500,1.500,0.707,[CUDA memcpy Host-to-Device]",
        "0.000,1,0.000,0.000,0.000,0.000,0.000,[CUDA memset]",
    ],
    "nvtx_sum": [
        "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Style,Range",
        "55.6,100,1,100.0,100.0,100,100,0.0,PushPop,:a",
        "33.3,60,1,60.0,60.0,60,60,0.0,StartEnd,:a",
        "11.1,20,1,20.0,20.0,20,20,0.0,PushPop,:b",
    ],
    "osrtsum": [
        CALL_HEADER,
        "60.0,30,1,30.0,30.0,30,30,0.0,write",
        "40.0,20,2,10.0,10.0,5,15,7.1,read",
    ],
}


@pytest.mark.parametrize("rule", list(GOLDEN))
def test_golden_csv(writer, rule):
    run = run_cli("stats", "-r", rule, "--format", "csv", build(writer))
    assert run.code == 0, run.err
    assert run.out.splitlines() == GOLDEN[rule]


@pytest.mark.parametrize("rule, alias", [("cuda_gpu_kern_sum", "gpukernsum"), ("cuda_api_sum", "cudaapisum"),
                                         ("cuda_gpu_mem_time_sum", "gpumemtimesum"),
                                         ("cuda_gpu_mem_size_sum", "gpumemsizesum"), ("nvtx_sum", "nvtxsum")])
def test_nsys_2022_names_are_aliases(writer, rule, alias):
    run = run_cli("stats", "-r", alias, "--format", "csv", build(writer))
    assert run.code == 0, run.err
    assert run.out.splitlines() == GOLDEN[rule]


@pytest.mark.parametrize("option, first", [
    ("base", "72.4,210,3,70.0,60.0,50,100,26.5,add"),
    ("mangled", "72.4,210,3,70.0,60.0,50,100,26.5,_Z3addPiS_S_"),
    ("column=Name/Instances", '"add(int*, int*, int*)",3'),
])
def test_kernel_options(writer, option, first):
    run = run_cli("stats", "-r", f"cuda_gpu_kern_sum:{option}", "--format", "csv", build(writer))
    assert run.code == 0, run.err
    assert run.out.splitlines()[1] == first


def test_base_and_mangled_exclude_each_other(writer):
    run = run_cli("stats", "-r", "cuda_gpu_kern_sum:base:mangled", build(writer))
    assert run.code == 2 and "exclude each other" in run.err


def test_tsv_and_column(writer):
    path = build(writer)
    tsv = run_cli("stats", "-r", "cuda_gpu_kern_sum", "--format", "tsv", path)
    assert tsv.out.splitlines()[1] == "72.4\t210\t3\t70.0\t60.0\t50\t100\t26.5\tadd(int*, int*, int*)"
    column = run_cli("stats", "-r", "cuda_api_sum", "--format", "column", path)
    assert column.out.splitlines() == [
        " Time (%)  Total Time (ns)  Num Calls  Avg (ns)  Med (ns)  Min (ns)  Max (ns)  StdDev (ns)        Name",
        " --------  ---------------  ---------  --------  --------  --------  --------  -----------  ----------------",
        "     53.8               70          1      70.0      70.0        70        70          0.0  cudaMalloc",
        "     23.1               30          2      15.0      15.0        10        20          7.1  cudaLaunchKernel",
        "     23.1               30          1      30.0      30.0        30        30          0.0  cudaFree",
    ]


def test_json_has_typed_values(writer):
    import json

    run = run_cli("stats", "-r", "cuda_gpu_mem_size_sum", "--format", "json", build(writer))
    assert json.loads(run.out)[0] == {"Total (MB)": 2.0, "Count": 2, "Avg (MB)": 1.0, "Med (MB)": 1.0,
                                      "Min (MB)": 0.5, "Max (MB)": 1.5, "StdDev (MB)": 0.707,
                                      "Operation": "[CUDA memcpy Host-to-Device]"}


def test_asys_rules_refuse_tsv(writer):
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "tsv", build(writer))
    assert run.code == 2 and "does not mirror an nsys stats report" in run.err


def test_asys_rules_unchanged(writer):
    """The asys summary of the same kernels keeps the reference's CSV (Row#, integers, population deviation)."""
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "csv", build(writer))
    assert run.out.splitlines()[1] == '1,72.4,210,3,70,60,50,100,21,"add(int*, int*, int*)",'


def test_quoting_and_truncation(tmp_path):
    """A name holding a quote or a comma is quoted in CSV, whole; the console cuts a name past 100
    characters to 99 and '…' (nsys 2024)."""
    writer = ReportWriter(tmp_path / "report.sqlite", NSYS)
    long_name = "k" * 120
    names = writer.strings(['say "hi"', long_name, "plain"])
    writer.add("kernels", start=[0, 10, 30], end=[5, 25, 60], deviceId=0, demangledName=names, shortName=names,
               correlationId=[1, 2, 3], globalPid=1 << 24)
    writer.add("runtime", start=[0], end=[1], globalTid=(1 << 24) | 1, nameId=[writer.string("cudaFree")])
    writer.close()
    csv = run_cli("stats", "-r", "cuda_gpu_kern_sum", "--format", "csv", writer.path).out.splitlines()
    assert [line.split(",", 8)[-1] for line in csv[1:]] == ["plain", long_name, '"say ""hi"""']
    column = run_cli("stats", "-r", "cuda_gpu_kern_sum", "--format", "column", writer.path).out.splitlines()
    assert column[3].endswith("  " + "k" * 99 + "\u2026") and len(column[1]) == len(column[3])


def test_nsight_names(tmp_path):
    """On an Nsight export: ``_v`` + four digits dropped from API names (not five: nsys keeps
    ``_v10000``), a range of the default domain ``:name``, one of a named domain ``domain:name``."""
    writer = ReportWriter(tmp_path / "report.sqlite", NSYS)
    launch, capturing = writer.strings(["cudaLaunchKernel_v7000", "cudaStreamIsCapturing_v10000"])
    writer.add("runtime", start=[0, 20], end=[10, 25], globalTid=(1 << 24) | 1, nameId=[launch, capturing])
    writer.add("hgtx", start=[0, 0, 10], end=[-1, 50, 20], eventType=[75, 59, 59], domainId=[7, 7, 0],
               text=["Torch", "step", "copy"], globalTid=(1 << 24) | 1)
    writer.close()
    api = run_cli("stats", "-r", "cuda_api_sum", "--format", "csv", writer.path)
    assert [line.rsplit(",", 1)[1] for line in api.out.splitlines()[1:]] == ["cudaLaunchKernel",
                                                                          "cudaStreamIsCapturing_v10000"]
    nvtx = run_cli("stats", "-r", "nvtx_sum", "--format", "csv", writer.path)
    assert [line.rsplit(",", 1)[1] for line in nvtx.out.splitlines()[1:]] == ["Torch:step", ":copy"]


def test_sample_deviation():
    from asysstats.compute.grouped import grouped_stats, sample_deviation

    _, stats = grouped_stats([np.array([0, 0, 0, 1])], np.array([2, 4, 9, 5]))
    assert np.allclose(sample_deviation(stats), [np.std([2, 4, 9], ddof=1), 0.0])


KERNELS = st.lists(st.tuples(st.sampled_from(["k0", "k1", "k2"]), st.integers(0, 10_000), st.integers(0, 5_000)),
                   min_size=1, max_size=30)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(KERNELS)
def test_kernel_statistics_against_brute_force(tmp_path_factory, kernels):
    """Random kernels (name, start, duration): per name the count, total, float average and median,
    min, max and sample deviation as the statistics module computes them, rows by total descending."""
    writer = ReportWriter(tmp_path_factory.mktemp("k") / "k.asysrep")
    ids = writer.strings([name for name, _, _ in kernels])
    writer.add("kernels", start=[s for _, s, _ in kernels], end=[s + d for _, s, d in kernels], deviceId=0,
               demangledName=ids, shortName=ids, mangledName=ids, correlationId=list(range(len(kernels))),
               globalPid=1000 << 24)
    writer.close()
    rows = list(csv.DictReader(io.StringIO(run_cli("stats", "-r", "cuda_gpu_kern_sum", "--format", "csv",
                                                    writer.path).out)))
    by_name: dict[str, list[int]] = {}
    for name, _, duration in kernels:
        by_name.setdefault(name, []).append(duration)
    check_against(rows, by_name, "Instances")


def check_against(rows: list[dict[str, str]], by_name: dict[str, list[int]], count: str = "Num Calls") -> None:
    """Each printed row's statistics equal the brute-force ones of its name (``count``: the column
    of the number of values); totals descending."""
    assert sorted(r["Name"] for r in rows) == sorted(by_name)
    totals = [int(r["Total Time (ns)"]) for r in rows]
    assert totals == sorted(totals, reverse=True)
    for row in rows:
        values = by_name[row["Name"]]
        deviation = statistics.stdev(values) if len(values) > 1 else 0.0
        assert (int(row[count]), int(row["Total Time (ns)"]), int(row["Min (ns)"]), int(row["Max (ns)"])) == \
            (len(values), sum(values), min(values), max(values))
        for column, value in (("Avg (ns)", statistics.mean(values)), ("Med (ns)", statistics.median(values)),
                              ("StdDev (ns)", deviation)):
            assert float(row[column]) == pytest.approx(value, abs=0.05 + 1e-9 * value), column


@pytest.mark.parametrize("fmt", ["csv", "tsv", "column"])
def test_nvidia_formats_do_not_import_pandas(tmp_path, fmt):
    """pyarrow imports pandas (0.3-0.8 s) when a Python list or int meets pa.array or a compute
    function; NVIDIA's writers build their arrays from buffers (compute.arrow) instead."""
    import subprocess
    import sys

    report = build(ReportWriter(tmp_path / "r.sqlite", dialect=NSYS))
    code = ("import sys\nfrom asysstats.cli import main\n"
            f"sys.argv = ['asys', 'stats', '-r', 'cuda_gpu_kern_sum,nvtx_sum', '--format', '{fmt},{fmt}', "
            f"{str(report)!r}]\n"
            "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code in (0, None), exc.code\n"
            "print('pandas' in sys.modules, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stderr.splitlines()[-1] == "False"
