"""Issue 27, rule level: zero-length activities, `op=` filtering, operator type names,
kernel-matched custom types, `hgtx-name` desync groups, projection ties, PCCL bytes,
headers of the reference's examples, and rule options (`rows`, `gap`, `\\/`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_hggc_api import csv
from test_operators_build import Build
from test_operators_build import csv as stats

from conftest import run_cli

MS = 1_000_000


# ---------------------------------------------------------------- 1. zero-length activity splits a gap

def test_zero_length_kernel_splits_the_gap(writer):
    # pid 1, device 0 (ms):  [0,1)        |5         [10,11)
    #                        kernel   kernel (start = end)  memcpy
    # gaps: [1,5) 4 ms and [5,10) 5 ms, never [1,10) 9 ms across the zero-length kernel
    writer.add("kernels", start=[0, 5 * MS], end=[1 * MS, 5 * MS], deviceId=0, globalPid=1 << 24)
    writer.add("memcpy", start=[10 * MS], end=[11 * MS], deviceId=0, globalPid=1 << 24)
    writer.close()
    assert csv(writer.path, "ppu_gaps:gap=0", "analyze") == [
        "Row#,Duration (ns),Start (ns),PID,Device ID,",
        "1,5000000,5000000,1,0,",
        "2,4000000,1000000,1,0,",
    ]


def test_zero_length_activity_at_the_edge_opens_the_span(writer):
    # pid 1, device 0 (ms):  |0 (memset, start = end)     [3,4) kernel
    # the zero-length memset is the first activity: the gap [0,3) is reported
    writer.add("kernels", start=[3 * MS], end=[4 * MS], deviceId=0, globalPid=1 << 24)
    writer.add("memset", start=[0], end=[0], deviceId=0, globalPid=1 << 24)
    writer.close()
    assert csv(writer.path, "ppu_gaps:gap=0", "analyze")[1:] == ["1,3000000,0,1,0,"]


# ---------------------------------------------------------------- 2. op= filters, it does not relabel

MOE_RANGE = "D_MoE,M_8_E_128_H_2048_In_768_topk_8"
GEMM_TEXT = "GemmEx,n,n,64,64,64,64,64,64,1,0,1,DEFAULT,BF16,ALGO,32F,EPILOGUE_DEFAULT"


def build_operators(writer):
    # thread 100, device 0:
    #   D_MoE [100,300)     launch@110 -> topk_kernel     [1000,1100)   (claimed by the MoE range)
    #                       launch@120 -> cutlass_gemm_a  [1100,1400)   (a GEMM by its name: claims itself)
    #   [ACBLAS] [400,500)  launch@410 -> gemm_b          [2000,2200)
    #   aten::add [600,700) launch@610 -> add_kernel      [3000,3050)
    #   no range            launch@900 -> relu_kernel     [4000,4020)   (correlated with no operator: others)
    # all types: GEMM 300 + GEMM 200 + MoE 100 + PyTorch 50 = 650 ns; with others + 20 = 670 ns
    b = Build(writer)
    b.domain("moe")
    b.domain("acblas")
    b.device(0, "PPU-ZW810E")
    b.range(MOE_RANGE, 100, 300, "moe")
    b.range(f"[ACBLAS] --format={GEMM_TEXT}", 400, 500, "acblas")
    b.range("aten::add, seq = 3, op_id = 30, sizes = [[64], [64]]", 600, 700)
    b.kernel("topk_kernel", 1000, 1100, launch=110)
    b.kernel("cutlass_gemm_a", 1100, 1400, launch=120)
    b.kernel("gemm_b", 2000, 2200, launch=410)
    b.kernel("add_kernel", 3000, 3050, launch=610)
    b.kernel("relu_kernel", 4000, 4020, launch=900)
    return b.close()


def totals(lines: list[str]) -> list[tuple[str, str, str]]:
    """(OP Type, Total Time, Percent) of ppu_op_sum rows."""
    return [tuple(line.split(",")[1:4]) for line in lines[1:]]  # type: ignore[misc]


def test_op_filter_keeps_the_unfiltered_values(writer):
    path = build_operators(writer)
    assert totals(csv(path, "ppu_op_sum")) == [
        ('"GEMM"', "300", "46.2"), ('"GEMM"', "200", "30.8"), ('"MoE"', "100", "15.4"), ('"PyTorch"', "50", "7.7")]
    # the MoE range does not take the GEMM kernel when GEMM is not listed: its total stays 100 ns, its share 15.4 %
    assert totals(csv(path, "ppu_op_sum:op=MoE")) == [('"MoE"', "100", "15.4")]
    # others: only the kernel correlated with no operator (not add_kernel, which aten::add claims); 20 / 670
    assert totals(csv(path, "ppu_op_sum:op=others")) == [('"others"', "20", "3.0")]
    assert totals(csv(path, "ppu_op_sum:op=GEMM/others")) == [
        ('"GEMM"', "300", "44.8"), ('"GEMM"', "200", "29.9"), ('"others"', "20", "3.0")]


def test_op_type_sum_summary_covers_the_listed_types(writer):
    path = build_operators(writer)
    lines = csv(path, "ppu_op_type_sum:op=GEMM/PyTorch")
    # Summary: 550 ns of the 650 ns of every type = 84.6 %; its top operator is cutlass_gemm_a (300 of GEMM's 500)
    assert [line.split(",")[1:6] for line in lines[1:]] == [
        ['"Summary"', "84.6", "183", "550", "3"], ['"GEMM"', "76.9", "250", "500", "2"],
        ['"PyTorch"', "7.7", "50", "50", "1"]]


def rows_by_type(lines: list[str]) -> list[str]:
    return [line.split(",", 1)[1] for line in lines[1:]]


def test_filtered_rows_equal_the_unfiltered_rows(writer):
    """Property: for every set of types, op= prints exactly the unfiltered rows of those types, in order."""
    import itertools

    path = build_operators(writer)
    types = ("GEMM", "MoE", "PyTorch", "PCCL")
    for rule in ("ppu_op_sum", "ppu_op_type_sum", "ppu_op_kernel_breakdown", "ppu_op_breakdown", "ppu_op_trace"):
        whole = rows_by_type(csv(path, rule))  # every rule's first column is OP Type
        for count in range(1, len(types) + 1):
            for chosen in itertools.combinations(types, count):
                got = rows_by_type(csv(path, f"{rule}:op={'/'.join(chosen)}"))
                expected = [r for r in whole if r.split(",")[0].strip('"') in chosen]
                if rule == "ppu_op_type_sum":  # the Summary row sums the listed types; the type rows are unchanged
                    got = got[1:]
                assert got == expected, (rule, chosen)


# ---------------------------------------------------------------- 3. operator type names are case-insensitive

def types_of(lines: list[str]) -> list[str]:
    return [line.split(",")[1].strip('"') for line in lines[1:]]


def test_custom_rule_naming_a_builtin_type_in_another_case_is_that_type(writer):
    path = build_operators(writer)
    # the reference's example: Pytorch=hgtx:aten is the built-in PyTorch (claiming after the acBLAS range)
    lines = stats(path, "ppu_op_type_sum", "--ppu-op-config", "Pytorch=hgtx:aten")
    assert types_of(lines) == ["Summary", "GEMM", "MoE", "PyTorch"]
    assert lines == stats(path, "ppu_op_type_sum")
    assert types_of(stats(path, "ppu_op_sum:op=pytorch", "--ppu-op-config", "PYTORCH=hgtx:aten")) == ["PyTorch"]


def test_custom_types_in_several_cases_are_one_type(writer):
    path = build_operators(writer)
    config = ("--ppu-op-config", "MyGemm=kernel:gemm_b", "--ppu-op-config", "MYGEMM=kernel:relu")
    lines = stats(path, "ppu_op_type_sum:op=mygemm", *config)
    # gemm_b 200 + relu_kernel 20 in one type, spelled as its first rule; 220 of all 670 ns = 32.8 %
    assert [line.split(",")[1:6] for line in lines[1:]] == [
        ['"Summary"', "32.8", "110", "220", "2"], ['"MyGemm"', "32.8", "110", "220", "2"]]


# ---------------------------------------------------------------- 4. a kernel-matched custom type: one naming

def test_kernel_matched_custom_type_is_named_after_the_kernel(writer):
    path = build_operators(writer)
    config = ("--ppu-op-config", "MyGemm=kernel:cutlass")
    # cutlass_gemm_a runs inside the D_MoE framework range: named after the kernel (docs/operators.md), with or
    # without op=MyGemm
    whole = [line for line in stats(path, "ppu_op_sum", *config) if '"MyGemm"' in line]
    assert whole == ['1,"MyGemm",300,46.2,1,300,300,300,300,300,100.0,0,"-","-","-","cutlass_gemm_a",']
    assert stats(path, "ppu_op_sum:op=MyGemm", *config)[1:] == whole
    # a built-in kernel-name type inside a framework operator keeps the operator's name (cross-vendor matching)
    assert stats(path, "ppu_op_sum:op=GEMM")[1].endswith(f'"{MOE_RANGE}",')


# ---------------------------------------------------------------- 5. pccl_desync_*:hgtx-name: by communication

REDUCE = "AllReduce, p:0, c:1024, d:9, r:{rank}, w:2, h:abc, t:1, b:0x{rank}/0x9"
NCCL_KERNEL = "ncclDevKernel_AllReduce_Sum_bf16"


def build_two_ranks(writer):
    # rank r on thread 100 + r, device r; each NCCL range holds one launch:
    #   rank 0: AllReduce r:0 [100,200) -> kernel [1000,1500)    AllReduce r:0 [300,400) -> kernel [2000,2100)
    #   rank 1: AllReduce r:1 [100,200) -> kernel [1100,1500)    AllReduce r:1 [300,400) -> kernel [2050,2150)
    # communication 1: duration 500, overlap 400, desync 20.0 %; communication 2: 150, 50, 66.7 %
    b = Build(writer)
    b.domain("NCCL")
    for rank, (first, second) in enumerate((((1000, 1500), (2000, 2100)), ((1100, 1500), (2050, 2150)))):
        b.range(REDUCE.format(rank=rank), 100, 200, "NCCL", tid=100 + rank)
        b.range(REDUCE.format(rank=rank), 300, 400, "NCCL", tid=100 + rank)
        b.kernel(NCCL_KERNEL, *first, launch=110, device=rank, tid=100 + rank)
        b.kernel(NCCL_KERNEL, *second, launch=310, device=rank, tid=100 + rank)
    return b.close()


def test_hgtx_name_desync_groups_the_ranks_of_a_communication(writer):
    path = build_two_ranks(writer)
    shown = "NCCL:AllReduce, p:0, c:1024, d:9, w:2, h:abc, t:1/" + NCCL_KERNEL  # the range without r: and b:
    assert stats(path, "pccl_desync_trace:hgtx-name:column=Duration (ns)/Overlap (ns)/Desync Rate (%)/Instances/"
                       "Kernel Name")[1:] == [f'1,150,50,66.7,2,"{shown}",', f'2,500,400,20.0,2,"{shown}",']
    assert stats(path, "pccl_desync_summary:hgtx-name:column=Count/Desync Avg (%)/Desync Max (%)/Kernel Name")[1:] == [
        f'1,2,43.3,66.7,"{shown}",']
    # the same communications as without hgtx-name
    assert stats(path, "pccl_desync_summary:column=Count/Desync Avg (%)/Kernel Name")[1:] == [
        f'1,2,43.3,"{NCCL_KERNEL}",']


# ---------------------------------------------------------------- 6. hgtx_ppu_proj_sum: printed ties by name

def test_projection_ties_on_the_printed_in_use_go_by_name(writer):
    # thread 100: "zeta" [20,30) launch@25 -> kernel [2000,3004)   1004 / 10000 = 10.04 % -> prints 10.0
    #             "alpha" [0,10) launch@5  -> kernel [0,1000)      1000 / 10000 = 10.00 % -> prints 10.0
    #             no range      launch@100 -> kernel [9000,10000)  (the analysis range is [0, 10000))
    b = Build(writer)
    b.range("zeta", 20, 30)
    b.range("alpha", 0, 10)
    b.kernel("k", 2000, 3004, launch=25)
    b.kernel("k", 0, 1000, launch=5)
    b.kernel("k", 9000, 10000, launch=100)
    path = b.close()
    assert stats(path, "hgtx_ppu_proj_sum:column=Range/In-Use (%)/Proj Active Time (ns)")[1:] == [
        '1,"alpha",10.0,1000,', '2,"zeta",10.0,1004,']


# ---------------------------------------------------------------- 7. PCCL bytes moved, per collective (D22)

# One execution of each operator with c:1000 float elements (d:7, 4 bytes) on w:4 ranks (devices 0..3; Send and Recv
# on device 0 only). The bytes of one rank, summed over the 4 ranks:
BYTES = {
    "AllReduce": 4 * 2 * 3 / 4 * 1000 * 4,  # 2(n-1)/n x the buffer c                            = 24000
    "AllGather": 4 * 3 / 4 * (4 * 1000) * 4,  # (n-1)/n x the whole buffer n x c (c: one rank's part) = 48000
    "ReduceScatter": 4 * 3 / 4 * (4 * 1000) * 4,  # as AllGather (c: the count each rank receives)  = 48000
    "AllToAll": 4 * 3 / 4 * 1000 * 4,  # (n-1)/n x c (c: a rank's whole send buffer)             = 12000
    "Broadcast": 4 * 1000 * 4,  # 1 x c                                                          = 16000
    "Reduce": 4 * 1000 * 4,  # 1 x c                                                             = 16000
    "Send": 1000 * 4,  # point to point: 1 x c, one rank                                          = 4000
    "Recv": 1000 * 4,  #                                                                           = 4000
}


def test_pccl_bytes_per_collective(writer):
    import json

    from test_pccl_ops import add_ops, allreduce

    execs = []
    for index, op in enumerate(BYTES):
        devices = (0,) if op in ("Send", "Recv") else (0, 1, 2, 3)
        start = 10_000 * (index + 1)
        execs += [(allreduce(1000, rank, "0x0", w=4, op=op, d=7), rank, start, start + 100) for rank in devices]
    run = run_cli("stats", "-r", "pccl_op_sum", "--format", "json", add_ops(writer, execs))
    assert run.code == 0, run.err
    got = {row["OP Name"].split(",")[0]: row["Trans Size (bytes)"] for row in json.loads(run.out)}
    assert got == {op: int(size) for op, size in BYTES.items()}
    assert got == {"AllReduce": 24000, "AllGather": 48000, "ReduceScatter": 48000, "AllToAll": 12000,
                   "Broadcast": 16000, "Reduce": 16000, "Send": 4000, "Recv": 4000}


# ---------------------------------------------------------------- 9. the reference's example headers

SPEC = Path(__file__).resolve().parents[2] / "shared" / "spec" / "asys-stats-rules.txt"
RULE_MENTION = re.compile(r"asys (?:stats|analyze)\b.*?-r ([a-z_0-9]+)|--help-reports? ([a-z_0-9]+)")
EXAMPLE_HEADER = re.compile(r"^(?:Row#|PID,Device ID),")


def example_headers() -> dict[str, str]:
    """Rule -> the header line of its example CSV in the reference (the rule last named above it). A header
    cut short (``Row#,...``) is no example."""
    found: dict[str, str] = {}
    rule = None
    for line in SPEC.read_text(encoding="utf-8").splitlines():
        mention = RULE_MENTION.search(line)
        if mention:
            rule = mention.group(1) or mention.group(2)
        if EXAMPLE_HEADER.match(line) and rule and "..." not in line:
            found.setdefault(rule, line.strip())
    return found


def printed_header(name: str) -> str:
    """The first line our CSV writer prints for rule ``name`` with its default options."""
    import numpy as np

    from asysstats.core.strings import StringPool
    from asysstats.rulebook import find_rule
    from asysstats.writing.writers import to_csv

    rule = find_rule(name, "analyze" if name in ("ppu_gaps", "ppu_time_util") else "stats")
    empty = {column.name: np.empty(0, np.int64) for column in rule.columns}
    return to_csv(rule.shaped(rule.options(), empty, StringPool())).splitlines()[0]


@pytest.mark.skipif(not SPEC.is_file(), reason="../shared/spec/asys-stats-rules.txt is absent")
def test_every_example_header_is_the_printed_header():
    examples = example_headers()
    assert len(examples) >= 30  # the reference has an example CSV for most rules
    wrong = {rule: (header, printed_header(rule)) for rule, header in examples.items()
             if printed_header(rule) != header}
    assert wrong == {}


# ---------------------------------------------------------------- 8. headers where the reference's example wins

def test_desync_p90_is_opt_in(writer):
    path = build_two_ranks(writer)  # one communication name: rates 20.0 and 66.7 (P90, nearest rank 2 of 2: 66.7)
    lines = stats(path, "pccl_desync_summary")
    assert lines[0] == ("Row#,Time (%),Count,Desync Avg (%),Desync Med (%),Desync Min (%),Desync Max (%),"
                        "Desync StdDev (%),Total Duration (ns),Total Overlap (ns),Kernel Name,")
    assert lines[1] == f'1,100.0,2,43.3,43.3,20.0,66.7,23.3,650,450,"{NCCL_KERNEL}",'
    flagged = stats(path, "pccl_desync_summary:p90")
    assert flagged[0].startswith("Row#,Time (%),Count,Desync Avg (%),Desync Med (%),Desync P90 (%),Desync Min (%),")
    assert flagged[1] == f'1,100.0,2,43.3,43.3,66.7,20.0,66.7,23.3,650,450,"{NCCL_KERNEL}",'
    assert stats(path, "pccl_desync_summary:column=Desync P90 (%)")[1] == "1,66.7,"  # column= names it too


def test_memory_usage_summary_has_no_row_number(writer):
    from test_memory_usage import CONFIG, build

    # the fixture of test_memory_usage: unreleased 300 (others), 200 (launch_kernel/loss/torch), 70, 50 bytes
    lines = stats(build(writer), "device_memory_usage_summary:rows=2", *CONFIG)
    assert lines == ["PID,Device ID,Group List,Memory Usage,", '100,0,"others",300,',
                     '100,0,"launch_kernel/loss/torch",200,']  # the reference's example header: no Row#
    run = run_cli("stats", "-r", "device_memory_usage_summary", "--format", "column", writer.path)
    assert run.out.splitlines()[0].split() == ["PID", "Device", "ID", "Group", "List", "Memory", "Usage"]


def test_breakdowns_print_the_example_columns_and_all_columns_the_list(writer):
    path = build_operators(writer)
    kernel_rows = stats(path, "ppu_op_kernel_breakdown")
    assert kernel_rows[0] == ("Row#,OP Type,Framework OP,Framework Time (%),Library OP,Library Time (%),Kernel Name,"
                              "Kernel Time (%),Avg (ns),Instances,")
    full = stats(path, "ppu_op_kernel_breakdown:all-columns")
    assert full[0] == ("Row#,OP Type,Framework OP,Framework Time (%),Framework Avg (ns),Framework Instances,Library OP,"
                       "Library Time (%),Library Avg (ns),Library Instances,Kernel Name,Kernel Time (%),Avg (ns),"
                       "Instances,")
    # top row: D_MoE [1000,1400) = 400 of 650 ns (61.5 %); its Native library row: topk_kernel and cutlass_gemm_a,
    # 2 instances of 200 on average; the kernel cutlass_gemm_a 300 ns (46.2 %)
    moe = f'1,"MoE","{MOE_RANGE}",61.5'
    assert full[1] == f'{moe},400,1,"Native",61.5,200,2,"cutlass_gemm_a",46.2,300,1,'
    assert kernel_rows[1] == f'{moe},"Native",61.5,"cutlass_gemm_a",46.2,300,1,'
    compare = run_cli("stats", "-r", "ppu_operator_kernel_breakdown_compare", "--format", "csv", path, path)
    assert compare.out.splitlines()[0] == (
        "Row#,Device Name,OP Type,Base Framework OP,Base Framework Time (%),Base Library OP,Base Library Time (%),"
        "Base Kernel,Base Kernel Time (%),Base Kernel Avg (ns),Base Kernel Instances,Target Framework OP,"
        "Target Framework Time (%),Target Library OP,Target Library Time (%),Target Kernel,Target Kernel Time (%),"
        "Target Kernel Avg (ns),Target Kernel Instances,Avg Ratio,")


# ---------------------------------------------------------------- 10. rule options

def test_every_rule_that_prints_rows_takes_rows():
    from asysstats.rulebook import REGISTRY

    script_rules = {"ppu_op_unit_test"}  # prints a Python script, one line per row: rows= would cut the script
    # NVIDIA's reports take NVIDIA's options (docs/nsys.md)
    asys_rules = [r for r in REGISTRY if r.mirrors == "asys"]
    assert [r.name for r in asys_rules if "rows" not in {o.name for o in r.all_options}] == sorted(script_rules)


def test_rows_on_the_rules_that_refused_it(writer):
    path = build_operators(writer)
    assert stats(path, "hgtx_kern_sum:rows=1")[1:] == stats(path, "hgtx_kern_sum")[1:2]
    assert len(stats(path, "hgtx_pushpop_trace:rows=2")) == 3
    assert len(stats(path, "hgtx_ppu_proj_sum:rows=1")) == 2
    # a comparison: rows= cuts the printed rows; top= keeps the rows in the top N of either report
    compare = run_cli("stats", "-r", "ppu_operator_type_summary_compare:rows=2", "--format", "csv", path, path)
    assert compare.code == 0 and len(compare.out.splitlines()) == 3


def test_a_stats_rule_name_of_analyze_points_there(writer):
    writer.add("kernels", start=[0], end=[1], deviceId=0, globalPid=1 << 24)
    writer.close()
    run = run_cli("stats", "-r", "ppu_gaps", writer.path)
    assert run.code == 2 and run.err == ("error: rule 'ppu_gaps' is a rule of 'asys analyze', not of 'asys stats' "
                                         "(run: asys analyze -r ppu_gaps REPORT)\n")


def test_gaps_help_names_only_its_options():
    run = run_cli("analyze", "--help-report", "ppu_gaps")
    assert run.code == 0 and "merge-process-id" not in run.out and "gap=<x>" in run.out


def test_gap_takes_fractions_of_a_millisecond(writer):
    # pid 1, device 0: kernels [0, 0.4 ms) [0.9 ms, 1 ms) [1.6 ms, 2 ms): gaps of 0.5 ms (not longer) and 0.6 ms
    writer.add("kernels", start=[0, 900_000, 1_600_000], end=[400_000, 1_000_000, 2_000_000], deviceId=0,
               globalPid=1 << 24)
    writer.close()
    assert csv(writer.path, "ppu_gaps:gap=0.5", "analyze")[1:] == ["1,600000,1000000,1,0,"]
    assert csv(writer.path, "ppu_gaps:gap=.4999995", "analyze")[1:] == ["1,600000,1000000,1,0,", "2,500000,400000,1,0,"]
    for bad in ("-0.5", "1e-3", "0.5ms", "0.1234567891"):
        run = run_cli("analyze", "-r", f"ppu_gaps:gap={bad}", writer.path)
        assert run.code == 2 and "option 'gap' must be a decimal number" in run.err and run.err.count("\n") == 1


def test_escaped_slash_in_a_regex_list_is_a_literal_slash(writer):
    # thread 100: range "a/b" [0,10) launch@5 -> kernel [100,200); range "c" [20,30) launch@25 -> kernel [300,350)
    b = Build(writer)
    b.range("a/b", 0, 10)
    b.range("c", 20, 30)
    b.kernel("k", 100, 200, launch=5)
    b.kernel("k", 300, 350, launch=25)
    path = b.close()
    assert stats(path, r"hgtx_ppu_proj_sum:range-include=a\/b:column=Range")[1:] == ['1,"a/b",']
    assert stats(path, r"hgtx_ppu_proj_sum:range-include=a\/b/c:column=Range")[1:] == ['1,"a/b",', '2,"c",']
    assert stats(path, r"hgtx_ppu_proj_sum:range-exclude=^a\/:column=Range")[1:] == ['1,"c",']
