"""Operator comparisons: a PPU report (acBLAS annotations) against an NVIDIA report (cuBLAS
annotations, different kernel names); operators match by type and merged parameters."""

from __future__ import annotations

import dataclasses
import json

import pytest

from asysstats.analysis.inputs import Inputs
from asysstats.analysis.operators.parsers import without_run_ids
from asysstats.analysis.operators import analysis, instances
from asysstats.analysis.operators.common import AnalysisOptions
from asysstats.api.running import run_rule
from asysstats.reading.opening import open_report
from asysstats.rulebook import REGISTRY
from asysstats.rulebook.compare_operators import match_key
from asysstats.rulebook.operators_summary import OP_SUM
from asysstats.synth.writer import NSYS, ReportWriter
from asysstats.writing.writers import rows_as_records

from conftest import run_cli

PUSHPOP = 59
PPU, GPU = "PPU-ZW810E", "NVIDIA H20"
GEMM64 = "GemmEx,t,n,64,64,64,64,64,64,1,0,1,DEFAULT,BF16,{0}_GEMM_DEFAULT_TENSOR_OP,32F,EPILOGUE_DEFAULT"
GEMM128 = "GemmEx,t,n,128,64,64,128,64,128,1,0,1,DEFAULT,BF16,{0}_GEMM_DEFAULT_TENSOR_OP,32F,EPILOGUE_DEFAULT"
RELU = "aten::relu, seq = {0}, op_id = {1}, sizes = [[8]], input_op_ids = [({2},0)]"
ADD = "aten::add, seq = 9, op_id = 120, sizes = [[8], [8]], input_op_ids = [(119,0), (0,-1)]"
RELU_SHOWN, ADD_SHOWN = "aten::relu, sizes = [[8]]", "aten::add, sizes = [[8], [8]]"  # without per-run ids


def report(path, dialect, device: str, ops: list[tuple[str, int, int, str, tuple[int, int]]]) -> None:
    """One thread: each operator is an HGTX range [start, end) around one launch (at start + 10)
    of one kernel; ``ops`` = (range text, start, end, kernel name, kernel span)."""
    writer = ReportWriter(path, dialect=dialect)
    writer.add("devices", id=[0], name=[device])
    tid = (1 << 24) | 1
    writer.add("hgtx", start=[o[1] for o in ops], end=[o[2] for o in ops], eventType=PUSHPOP,
               text=[o[0] for o in ops], globalTid=tid, domainId=0)
    corr = list(range(1, len(ops) + 1))
    writer.add("runtime", start=[o[1] + 10 for o in ops], end=[o[1] + 20 for o in ops], globalTid=tid,
               correlationId=corr, nameId=writer.string("cudaLaunchKernel"))
    names = writer.strings([o[3] for o in ops])
    writer.add("kernels", start=[o[4][0] for o in ops], end=[o[4][1] for o in ops], deviceId=0, correlationId=corr,
               demangledName=names, shortName=names, mangledName=names, globalPid=1 << 24)
    writer.close()


@pytest.fixture
def op_paths(tmp_path):
    """base (PPU):    GEMM m64 x2 (100 + 100 ns), relu 50 ns, GEMM m128 40 ns (base only)
    target (NVIDIA): GEMM m64 150 ns, relu 100 ns (other seq/op_id), add 10 ns (target only)"""
    base, target = tmp_path / "base.asysrep", tmp_path / "target.sqlite"
    report(base, "asysrep", PPU, [
        (f"[ACBLAS] --format={GEMM64.format('ACBLAS')}", 0, 100, "k_ppu_a", (1000, 1100)),
        (f"[ACBLAS] --format={GEMM64.format('ACBLAS')}", 200, 300, "k_ppu_a", (1200, 1300)),
        (RELU.format(1, 5, 4), 400, 500, "k_relu", (1400, 1450)),
        (f"[ACBLAS] --format={GEMM128.format('ACBLAS')}", 600, 700, "k_ppu_c", (1600, 1640)),
    ])
    report(target, NSYS, GPU, [
        (f"[CUBLAS] --format={GEMM64.format('CUBLAS')}", 0, 100, "k_nv_a", (2000, 2150)),
        (RELU.format(7, 99, 98), 200, 300, "k_relu", (2200, 2300)),
        (ADD, 400, 500, "k_nv_c", (2400, 2410)),
    ])
    return base, target


def csv(rule: str, *args) -> list[str]:
    run = run_cli("stats", "-r", rule, "--format", "csv", *args)
    assert run.code == 0, run.err
    return run.out.splitlines()


NO_UTIL = "column=Device Name/OP Type/Percent (%)/Instances/Avg (ns)/Avg Ratio/Total (ns)/Total Ratio/Active (ns)/" \
          "Active Ratio/Base OP Name/Target OP Name"
A64, C64 = f"ACBLAS:{GEMM64.format('ACBLAS')}", f"CUBLAS:{GEMM64.format('CUBLAS')}"
A128 = f"ACBLAS:{GEMM128.format('ACBLAS')}"


def test_operator_summary_compare_golden(op_paths):
    # base total 290: GEMM64 200, relu 50, GEMM128 40; target total 260: GEMM64 150, relu 100, add 10
    assert csv(f"ppu_operator_summary_compare:{NO_UTIL}", *op_paths) == [
        "Row#,Device Name,OP Type,Percent (%),Instances,Avg (ns),Avg Ratio,Total (ns),Total Ratio,Active (ns),"
        "Active Ratio,Base OP Name,Target OP Name,",
        f'1,"{PPU} / {GPU}","GEMM","69.0 / 57.7","2 / 1","100 / 150",1.5,"200 / 150",0.8,"200 / 150",0.8,'
        f'"{A64}","{C64}",',
        f'2,"{PPU} / {GPU}","PyTorch","17.2 / 38.5","1 / 1","50 / 100",2.0,"50 / 100",2.0,"50 / 100",2.0,'
        f'"{RELU_SHOWN}","{RELU_SHOWN}",',
        f'3,"{PPU} / -","GEMM","13.8 / -","1 / -","40 / -","-","40 / -","-","40 / -","-","{A128}","-",',
        f'4,"- / {GPU}","PyTorch","- / 3.8","- / 1","- / 10","-","- / 10","-","- / 10","-","-","{ADD_SHOWN}",',
    ]


def test_utilisations_are_those_of_each_report(op_paths):
    run = run_cli("stats", "-r", "ppu_operator_summary_compare", "--format", "json", *op_paths)
    pairs = [row["Compute Util (%)"] for row in json.loads(run.out)]
    singles = []
    for path in op_paths:
        single = rows_as_records(run_rule(OP_SUM, OP_SUM.parse_options({}), Inputs(open_report(path))))
        singles.append({without_run_ids(row["OP Name"]): row["Compute Util (%)"] for row in single})
    names = [(row["Base OP Name"], row["Target OP Name"]) for row in json.loads(run.out)]
    assert pairs == [[singles[0].get(b), singles[1].get(t)] for b, t in names]
    assert pairs[0][0] > 0 and pairs[0][1] > 0


def test_no_merge_option_reaches_both_reports(op_paths):
    """The operators keep their per-run ids (shown), yet match without them: no two runs share them."""
    lines = csv(f"ppu_operator_summary_compare:no-merge-pytorch-parameter:{NO_UTIL}", *op_paths)
    relu = [line for line in lines if "aten::relu" in line]
    assert len(relu) == 1 and f'"{RELU.format(1, 5, 4)}","{RELU.format(7, 99, 98)}"' in relu[0]


@pytest.mark.parametrize("options, types", [
    ("matched-only", ["GEMM", "PyTorch"]),
    ("top=1", ["GEMM"]),
    ("op=PyTorch", ["PyTorch", "PyTorch"]),
    ("order-by=type", ["GEMM", "GEMM", "PyTorch", "PyTorch"]),
])
def test_operator_summary_compare_options(op_paths, options, types):
    lines = csv(f"ppu_operator_summary_compare:{options}:column=OP Type", *op_paths)
    assert [line.split(",")[1].strip('"') for line in lines[1:]] == types


@pytest.mark.parametrize("order, names", [
    ("instances", [A64, A128, ADD_SHOWN, RELU_SHOWN]),  # 2, then the ties (1) by name
    ("name", [A128, A64, ADD_SHOWN, RELU_SHOWN]),
    ("avg", [A64, RELU_SHOWN, A128, ADD_SHOWN]),  # 150, 100, 40, 10
])
def test_operator_summary_compare_order_by(op_paths, order, names):
    rows = json.loads(run_cli("stats", "-r", f"ppu_operator_summary_compare:order-by={order}", "--format", "json",
                              *op_paths).out)
    assert [row["Base OP Name"] or row["Target OP Name"] for row in rows] == names


def test_operator_type_summary_compare_golden(op_paths):
    assert csv("ppu_operator_type_summary_compare", *op_paths) == [
        "Row#,Device Name,OP Type,Percent (%),Instances,Avg (ns),Avg Ratio,Total (ns),Total Ratio,"
        "PPU Active Time (ns),Active Time Ratio,Top OP Percent (%),Base Top OP Name,Target Top OP Name,",
        f'1,"{PPU} / {GPU}","Summary","100.0 / 100.0","4 / 3","72 / 86",1.2,"290 / 260",0.9,"290 / 260",0.9,'
        f'"83.3 / 100.0","{A64}","{C64}",',
        f'2,"{PPU} / {GPU}","GEMM","82.8 / 57.7","3 / 1","80 / 150",1.9,"240 / 150",0.6,"240 / 150",0.6,'
        f'"83.3 / 100.0","{A64}","{C64}",',
        f'3,"{PPU} / {GPU}","PyTorch","17.2 / 42.3","1 / 2","50 / 55",1.1,"50 / 110",2.2,"50 / 110",2.2,'
        f'"100.0 / 90.9","{RELU_SHOWN}","{RELU_SHOWN}",',
    ]


def test_summary_row_stays_first_with_one_side_empty(op_paths):
    lines = csv("ppu_operator_type_summary_compare:op=PyTorch:column=OP Type/Total (ns)", *op_paths)
    assert lines[1:] == ['1,"Summary","50 / 110",', '2,"PyTorch","50 / 110",']


@pytest.mark.parametrize("ppu, nvidia", [
    ("GEMM|ACBLAS|kind=GemmEx,algo=ACBLAS_GEMM_DEFAULT", "GEMM|CUBLAS|kind=GemmEx,algo=CUBLAS_GEMM_DEFAULT"),
    ("void pcclKernel_AllReduce_RING_LL_Sum_bf16(x)", "void ncclKernel_AllReduce_RING_LL_Sum_bf16(x)"),
    ("FlashAttention|FMHA|q=1 + FlashAttention|FMHA|q=2", "FlashAttention|fmha|q=1 + FlashAttention|Fmha|q=2"),
])
def test_match_keys_are_vendor_neutral(ppu, nvidia):
    assert match_key(ppu) == match_key(nvidia)
    assert match_key("GEMM|ACBLAS|m=1") != match_key("GEMM|ACBLAS|m=2")


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    path = tmp_path_factory.mktemp("sample") / "s.asysrep"
    assert run_cli("sample", path, "--seed", "4").code == 0
    return path


@pytest.mark.parametrize("rule", ["ppu_operator_summary_compare", "ppu_operator_type_summary_compare"])
def test_a_report_compared_with_itself(sample, rule):
    rows = json.loads(run_cli("stats", "-r", rule, "--format", "json", sample, sample).out)
    assert rows
    for row in rows:
        for name, value in row.items():
            if isinstance(value, list):
                assert value[0] == value[1], name
            elif name.endswith("Ratio"):
                assert value == 1.0, name
        assert all("-" != row[n] for n in row if n.startswith(("Base", "Target")))


class ReadOptions:
    """Analysis options that note every option read of them."""

    def __init__(self, values: AnalysisOptions, read: set) -> None:
        self.values, self.read = values, read

    def __getattr__(self, name):
        method = getattr(type(self.values), name, None)
        if callable(method):
            return method.__get__(self)  # what it reads is read through this proxy
        self.read.add(name)
        return getattr(self.values, name)

    def __repr__(self) -> str:
        return repr(self.values)


@pytest.mark.parametrize("rule", sorted({r for r in REGISTRY if "op" in {o.name for o in r.all_options}},
                                        key=lambda r: r.name), ids=lambda r: r.name)
def test_an_operator_analysis_reads_only_the_options_its_sharing_is_keyed_by(op_paths, rule):
    read: set = set()
    inputs = Inputs(open_report(op_paths[0]))
    analysis.analysed(inputs, ReadOptions(rule.parse_options({}).like(AnalysisOptions), read), "demangled", ())
    assert read and read <= {f.name for f in dataclasses.fields(AnalysisOptions)}


def test_a_comparison_analyses_the_operators_of_each_report_once(op_paths, tmp_path, monkeypatch):
    made, real = [], analysis.analysed
    monkeypatch.setattr(analysis, "analysed", lambda inputs, *rest: made.append(inputs.report.path) or
                        real(inputs, *rest))
    claimed, real_instances = [], instances.made_instances
    monkeypatch.setattr(instances, "made_instances", lambda an: claimed.append(an.inputs.report.path) or
                        real_instances(an))
    run = run_cli("compare", "-o", tmp_path / "c", *op_paths)
    assert run.code == 0, run.err
    assert sorted(made) == sorted(op_paths)  # three operator comparisons, one analysis a report
    assert sorted(claimed) == sorted(op_paths)  # the summary and the type summary share the instances
    for rule in ("ppu_operator_summary_compare", "ppu_operator_type_summary_compare",
                 "ppu_operator_kernel_breakdown_compare"):  # as each computed on its own
        assert (tmp_path / f"c_{rule}.csv").read_text().splitlines() == csv(rule, *op_paths)
    assert len(made) == 2 + 2 * 3
