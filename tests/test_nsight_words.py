"""Our own rules on an Nsight export speak CUDA's words: memory operation labels and the hints of
what a report lacks (issue 29, point 4); on an asysrep they keep the asys profiler's."""

from __future__ import annotations

import pytest

from asysstats.reading.schema import NSYS
from asysstats.synth.writer import ReportWriter

from conftest import NSYS_CORPUS, run_cli

HTOD, DTOH = 1, 2


def memory_report(path, dialect):
    # one host-to-device copy 0..40 ns, one memset 50..70 ns
    writer = ReportWriter(path, dialect=dialect) if dialect else ReportWriter(path)
    writer.add("memcpy", start=[0], end=[40], deviceId=0, contextId=1, streamId=7, correlationId=1, globalPid=1,
               bytes=[4096], copyKind=[HTOD])
    writer.add("memset", start=[50], end=[70], deviceId=0, contextId=1, streamId=7, correlationId=2, globalPid=1,
               value=0, bytes=[64], memKind=3)
    writer.create("kernels")
    writer.close()
    return path


@pytest.mark.parametrize("dialect, api", [(NSYS, "CUDA"), (None, "HGGC")])
def test_memory_operation_labels(tmp_path, dialect, api):
    path = memory_report(tmp_path / "r.sqlite", dialect)
    for rule in ("hggc_ppu_mem_time_sum", "hggc_ppu_mem_size_sum"):
        lines = run_cli("stats", "-r", rule, "--format", "csv", path).out.splitlines()
        assert [line.split(",")[-2] for line in lines[1:]] == [f'"[{api} memcpy Host-to-Device]"',
                                                               f'"[{api} memset]"']


@pytest.mark.parametrize("dialect, hint", [
    (NSYS, "does not contain CUDA kernel data (collect with nsys profile --trace cuda)"),
    (None, "does not contain HGGC kernel data (collect with --trace hggc)"),
])
def test_missing_data_names_the_profilers_option(tmp_path, dialect, hint):
    writer = ReportWriter(tmp_path / "r.sqlite", dialect=dialect) if dialect else ReportWriter(tmp_path / "r.sqlite")
    writer.add("runtime", start=[0], end=[1], globalTid=1, correlationId=[1], nameId=[writer.string("x")])
    writer.close()
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", writer.path)
    assert run.code == 2 and hint in run.err


def test_merged_nsight_exports_name_nsys_options(tmp_path):
    paths = []
    for rank in (0, 1):
        writer = ReportWriter(tmp_path / f"r{rank}.sqlite", dialect=NSYS)
        writer.add("runtime", start=[0], end=[1], globalTid=1, correlationId=[1], nameId=[writer.string("x")])
        writer.close()
        paths.append(writer.path)
    run = run_cli("stats", "--merge-reports", "-r", "hgtx_sum", *paths)
    assert run.code == 2 and "do not contain NV Tools Extension (NVTX) data (collect with nsys profile --trace nvtx)" in run.err


def test_a_real_export_says_cuda():
    path = NSYS_CORPUS / "dlprof_relu.sqlite"
    if not path.exists():
        pytest.skip("corpus absent")
    lines = run_cli("stats", "-r", "hggc_ppu_mem_time_sum", "--format", "csv", path).out.splitlines()
    assert [line.split(",")[-2] for line in lines[1:]] == ['"[CUDA memcpy Host-to-Device]"', '"[CUDA memset]"']
    cpu_only = NSYS_CORPUS / "sc23omp_cpuonly.sqlite"
    if cpu_only.exists():
        run = run_cli("stats", "-r", "hggc_ppu_trace", cpu_only)
        assert run.code == 2 and "(collect with nsys profile --trace cuda)" in run.err
