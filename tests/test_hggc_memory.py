"""hggc_ppu_trace, hggc_ppu_mem_time_sum and hggc_ppu_mem_size_sum: golden output, memory kind
names (report enumerations and the Nsight fallback), empty and missing tables, brute force."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from test_hggc_api import assert_summary, brute_summary, csv, run_json

from asysstats.synth.writer import NSYS, ReportWriter

from conftest import run_cli

TRACE_HEADER = ("Row#,Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (bytes),"
                "DymSMem (bytes),Bytes (bytes),Throughput (B/s),SrcMemKd,DstMemKd,Device,Ctx,Strm,Name,")
TIME_HEADER = "Row#,Time (%),Total Time (ns),Count,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Operation,"
SIZE_HEADER = "Row#,Total (bytes),Count,Avg (bytes),Med (bytes),Min (bytes),Max (bytes),StdDev (bytes),Operation,"
DASHES = ",".join(['"-"'] * 9)
HTOD, DTOH, PAGEABLE, PINNED, DEVICE = 1, 2, 1, 2, 3  # asysrep enumerations, numbered as Nsight's CUPTI


def build_trace(writer):
    add = writer.string("_Z3addPiS_S_")
    # device 0:  memcpy HtoD [100,110)   kernel add [200,260)   memcpy DtoH [300,307)
    # device 1:          memset [150,150) (zero length: no throughput)
    writer.add("devices", id=[0], name=["PPU-ZW810E"])
    writer.add("kernels", start=[200], end=[260], deviceId=0, contextId=1, streamId=7, correlationId=[1],
               demangledName=[add], gridX=2, gridY=1, gridZ=1, blockX=128, blockY=1, blockZ=1,
               registersPerThread=32, staticSharedMemory=0, dynamicSharedMemory=256)
    writer.add("memcpy", start=[100, 300], end=[110, 307], deviceId=0, contextId=1, streamId=7,
               correlationId=[2, 3], bytes=[1000, 3], copyKind=[HTOD, DTOH], srcKind=[PAGEABLE, DEVICE],
               dstKind=[DEVICE, PINNED])
    writer.add("memset", start=[150], end=[150], deviceId=1, contextId=1, streamId=7, correlationId=[4],
               bytes=[256], memKind=[DEVICE])
    writer.close()
    return writer.path


def test_ppu_trace_golden(writer):
    assert csv(build_trace(writer), "hggc_ppu_trace") == [
        TRACE_HEADER,
        f'1,100,10,2,{DASHES},1000,100000000000,"Pageable","Device","PPU-ZW810E (0)",1,7,"Memcpy HtoD (device)",',
        f'2,150,0,4,{DASHES},256,"-","Device","-","(1)",1,7,"Memset",',
        '3,200,60,1,2,1,1,128,1,1,32,0,256,"-","-","-","-","PPU-ZW810E (0)",1,7,"add(int*, int*, int*)",',
        f'4,300,7,3,{DASHES},3,428571428,"Device","Pinned","PPU-ZW810E (0)",1,7,"Memcpy DtoH (pinned)",',
    ]


def test_ppu_trace_base_name(writer):
    assert csv(build_trace(writer), "hggc_ppu_trace:base")[3].endswith(',"add",')


def test_nsight_export_without_enumerations_uses_nsight_numbering(tmp_path):
    w = ReportWriter(tmp_path / "old.sqlite", dialect=NSYS)
    # Nsight numbers memory kinds 0 Pageable, 1 Pinned, 2 Device (its ENUM_CUDA_MEM_KIND)
    w.add("memcpy", start=[0], end=[4], deviceId=0, bytes=[8], copyKind=[HTOD], srcKind=[0], dstKind=[2])
    w.add("memset", start=[10], end=[12], deviceId=0, bytes=[8], memKind=[2])
    w.close()
    con = sqlite3.connect(w.path)
    con.executescript("DROP TABLE ENUM_CUDA_MEMCPY_OPER; DROP TABLE ENUM_CUDA_MEM_KIND;")
    con.close()
    lines = csv(w.path, "hggc_ppu_trace")
    assert lines[1].endswith(',8,2000000000,"Pageable","Device","(0)",0,0,"Memcpy HtoD (device)",')
    assert lines[2].endswith(',8,4000000000,"Device","-","(0)",0,0,"Memset",')
    assert csv(w.path, "hggc_ppu_mem_time_sum")[1].endswith(',"[CUDA memcpy Host-to-Device]",')


def build_memory(writer):
    # memcpy: HtoD 100 B/10 ns, HtoD 300 B/30 ns, DtoH 50 B/40 ns, unknown kind 99: 8 B/0 ns
    # memset: 256 B/0 ns, 0 B/20 ns
    writer.add("memcpy", start=[0, 20, 60, 120], end=[10, 50, 100, 120], deviceId=0, bytes=[100, 300, 50, 8],
               copyKind=[HTOD, HTOD, DTOH, 99])
    writer.add("memset", start=[130, 140], end=[130, 160], deviceId=0, bytes=[256, 0])
    writer.close()
    return writer.path


def test_mem_time_sum_golden_with_tie(writer):
    assert csv(build_memory(writer), "hggc_ppu_mem_time_sum") == [
        TIME_HEADER,
        '1,40.0,40,1,40,40,40,40,0,"[HGGC memcpy Device-to-Host]",',
        '2,40.0,40,2,20,20,10,30,10,"[HGGC memcpy Host-to-Device]",',
        '3,20.0,20,2,10,10,0,20,10,"[HGGC memset]",',
        '4,0.0,0,1,0,0,0,0,0,"[HGGC memcpy Unknown]",',
    ]


def test_mem_size_sum_golden(writer):
    assert csv(build_memory(writer), "hggc_ppu_mem_size_sum") == [
        SIZE_HEADER,
        '1,400,2,200,200,100,300,100,"[HGGC memcpy Host-to-Device]",',
        '2,256,2,128,128,0,256,128,"[HGGC memset]",',
        '3,50,1,50,50,50,50,0,"[HGGC memcpy Device-to-Host]",',
        '4,8,1,8,8,8,8,0,"[HGGC memcpy Unknown]",',
    ]


def test_empty_memcpy_table_prints_the_header(writer):
    writer.create("memcpy")
    writer.close()
    for rule, header in (("hggc_ppu_mem_time_sum", TIME_HEADER), ("hggc_ppu_mem_size_sum", SIZE_HEADER),
                         ("hggc_ppu_trace", TRACE_HEADER)):
        run = run_cli("stats", "-r", rule, "--format", "csv", writer.path)
        assert (run.code, run.out) == (0, header + "\n")


def test_no_memory_tables_name_the_collection_option(writer):
    writer.add("runtime", start=[0], end=[1], globalTid=1, nameId=[writer.string("x")])
    writer.close()
    for rule in ("hggc_ppu_mem_time_sum", "hggc_ppu_mem_size_sum", "hggc_ppu_trace"):
        run = run_cli("stats", "-r", rule, writer.path)
        assert run.code == 2 and "(collect with --trace hggc)" in run.err and "Traceback" not in run.err


OPERATIONS = st.lists(st.tuples(st.sampled_from([0, HTOD, DTOH, 8]), st.integers(0, 500), st.integers(0, 30),
                                st.integers(0, 4096)), max_size=25)
LABELS = {0: "[HGGC memset]", HTOD: "[HGGC memcpy Host-to-Device]", DTOH: "[HGGC memcpy Device-to-Host]",
          8: "[HGGC memcpy Device-to-Device]"}


@settings(max_examples=40, deadline=None)
@given(OPERATIONS)
def test_memory_summaries_match_brute_force(operations):
    copies = [op for op in operations if op[0]]
    sets = [op for op in operations if not op[0]]
    with tempfile.TemporaryDirectory() as tmp:
        w = ReportWriter(Path(tmp) / "r.asysrep")
        w.add("memcpy", start=[s for _, s, _, _ in copies], end=[s + d for _, s, d, _ in copies], deviceId=0,
              bytes=[b for *_, b in copies], copyKind=[k for k, *_ in copies])
        w.add("memset", start=[s for _, s, _, _ in sets], end=[s + d for _, s, d, _ in sets], deviceId=0,
              bytes=[b for *_, b in sets])
        w.close()
        times: dict[str, list[int]] = {}
        sizes: dict[str, list[int]] = {}
        for kind, _, duration, size in operations:
            times.setdefault(LABELS[kind], []).append(duration)
            sizes.setdefault(LABELS[kind], []).append(size)
        assert_summary(run_json(w.path, "hggc_ppu_mem_time_sum"), brute_summary(times), "Operation", "Count")
        assert_summary(run_json(w.path, "hggc_ppu_mem_size_sum"), brute_summary(sizes), "Operation", "Count",
                       unit="bytes")


def test_a_table_column_coded_among_stacked_tables_has_the_fill_elsewhere():
    import numpy as np

    from asysstats.core.tables import NA
    from asysstats.rulebook.ppu_trace import table_coded

    ints = table_coded(np.array([5, 3, 5]), 1, 5, NA)
    assert ints.rows().tolist() == [NA, 5, 3, 5, NA] and ints.values.tolist() == [NA, 3, 5]
    floats = np.array([2.5, np.nan, 1.0])
    assert np.array_equal(table_coded(floats, 2, 6, np.nan).rows(), [np.nan, np.nan, 2.5, np.nan, 1.0, np.nan],
                          equal_nan=True)
    assert table_coded(np.array([-1, 4]), 0, 3, -1).values.tolist() == [-1, 4]  # the fill among the values
    assert table_coded(np.zeros(0, np.int64), 0, 2, -1).rows().tolist() == [-1, -1]
