"""Comparison rules on pairs of tiny reports: a PPU base (asysrep) and an NVIDIA target
(Nsight layout), with rows unmatched on either side, different device counts and a row
whose base time is 0. Ratios are target / base; cells are ``base / target``."""

from __future__ import annotations

import json

import openpyxl
import pytest

from asysstats.reading.schema import TABLES
from asysstats.rulebook import REGISTRY
from asysstats.synth.writer import ENUMS, NSYS, ReportWriter

from conftest import CORPUS_ABSENT, NSYS_FILES, fingerprint, run_cli

PUSHPOP = 59
PPU, GPU = "PPU-ZW810E", "NVIDIA H20"


def gtid(pid: int, tid: int = 0) -> int:
    return (pid << 24) | (tid or pid)


def kernels(writer, device: int, spans: list[tuple[int, int]], names: list[str], **extra) -> None:
    ids = writer.strings(names)
    writer.add("kernels", start=[s for s, _ in spans], end=[e for _, e in spans], deviceId=device,
               demangledName=ids, shortName=ids, mangledName=ids, globalPid=gtid(1) & ~0xFFFFFF, **extra)


def devices(writer, names: dict[int, str]) -> None:
    writer.add("devices", id=list(names), name=list(names.values()))


@pytest.fixture
def pair_paths(tmp_path):
    """Kernels, memcpy and memset on two reports.

    base (PPU, devices 0 and 1)                  target (NVIDIA, devices 0 and 2)
      dev0: add [0,100) mul [100,150) zero @200    dev0: add [1000,1090) add [1100,1190) mul [1200,1300)
            memcpy [300,350)                             zero [1300,1310) only_target [1400,1430)
      dev1: add [0,60) only_base [100,120)         dev2: memset [2000,2100)
    """
    base = ReportWriter(tmp_path / "base.asysrep")
    devices(base, {0: PPU, 1: PPU})
    kernels(base, 0, [(0, 100), (100, 150), (200, 200)], ["add", "mul", "zero"])
    kernels(base, 1, [(0, 60), (100, 120)], ["add", "only_base"])
    base.add("memcpy", start=[300], end=[350], deviceId=0, bytes=64, copyKind=1, globalPid=gtid(1) & ~0xFFFFFF)
    base.close()
    target = ReportWriter(tmp_path / "target.sqlite", dialect=NSYS)
    devices(target, {0: GPU, 2: GPU})
    kernels(target, 0, [(1000, 1090), (1100, 1190), (1200, 1300), (1300, 1310), (1400, 1430)],
            ["add", "add", "mul", "zero", "only_target"])
    target.add("memset", start=[2000], end=[2100], deviceId=2, bytes=64, value=0, globalPid=gtid(1) & ~0xFFFFFF)
    target.close()
    return base.path, target.path


def csv(rule: str, base, target, *extra) -> list[str]:
    run = run_cli("stats", "-r", rule, "--format", "csv", base, target, *extra)
    assert run.code == 0, run.err
    return run.out.splitlines()


KERNEL_HEADER = ("Row#,Device Name,Instances,Percent (%),Avg (ns),Avg Ratio,Total (ns),Total Ratio,"
                 "Base Kernel,Target Kernel,")


def test_kernel_summary_compare_golden(pair_paths):
    # base total 230: add 160 (2 x 80), mul 50, only_base 20, zero 0
    # target total 320: add 180 (2 x 90), mul 100, only_target 30, zero 10
    # order: the larger percentage of the two sides, descending
    assert csv("ppu_kernel_summary_compare", *pair_paths) == [
        KERNEL_HEADER,
        f'1,"{PPU} / {GPU}","2 / 2","69.6 / 56.3","80 / 90",1.1,"160 / 180",1.1,"add","add",',
        f'2,"{PPU} / {GPU}","1 / 1","21.7 / 31.3","50 / 100",2.0,"50 / 100",2.0,"mul","mul",',
        f'3,"- / {GPU}","- / 1","- / 9.4","- / 30","-","- / 30","-","-","only_target",',
        f'4,"{PPU} / -","1 / -","8.7 / -","20 / -","-","20 / -","-","only_base","-",',
        f'5,"{PPU} / {GPU}","1 / 1","0.0 / 3.1","0 / 10","-","0 / 10","-","zero","zero",',
    ]


@pytest.mark.parametrize("options, expected", [
    ("matched-only", ["add", "mul", "zero"]),
    ("top=1", ["add"]),
    ("top=3", ["add", "mul", "only_target", "only_base"]),
    ("top=3:matched-only", ["add", "mul"]),
])
def test_kernel_summary_compare_top_and_matched_only(pair_paths, options, expected):
    run = run_cli("stats", "-r", f"ppu_kernel_summary_compare:{options}", "--format", "json", *pair_paths)
    assert [row["Base Kernel"] or row["Target Kernel"] for row in json.loads(run.out)] == expected


def test_kernel_summary_compare_device_option_applies_to_both_reports(pair_paths):
    # device 1: the base has add [0,60) and only_base; the target has no device 1 (no name, no kernels)
    assert csv("ppu_kernel_summary_compare:device=1", *pair_paths)[1:] == [
        f'1,"{PPU} / -","1 / -","75.0 / -","60 / -","-","60 / -","-","add","-",',
        f'2,"{PPU} / -","1 / -","25.0 / -","20 / -","-","20 / -","-","only_base","-",',
    ]


def test_kernel_names_match_in_the_chosen_name_mode(tmp_path):
    base, target = ReportWriter(tmp_path / "b.asysrep"), ReportWriter(tmp_path / "t.asysrep")
    kernels(base, 0, [(0, 10)], ["void gemm<float>(float*)"])
    kernels(target, 0, [(0, 30)], ["void gemm<__half>(__half*)"])
    base.close(), target.close()
    assert len(csv("ppu_kernel_summary_compare", base.path, target.path)) == 3  # unmatched: two rows
    assert csv("ppu_kernel_summary_compare:base", base.path, target.path)[1:] == [
        '1,"- / -","1 / 1","100.0 / 100.0","10 / 30",3.0,"10 / 30",3.0,"gemm","gemm",',
    ]


TIME_UTIL_HEADER = "Row#,Device Name,In-Use (%),Duration (ns),PPU Active Time (ns),Base Device ID,Target Device ID,"


def test_time_util_compare_matches_devices_by_index(pair_paths):
    # base dev0: span [0,350) busy 200; dev1: span [0,120) busy 80
    # target dev0: span [1000,1430) busy 320; dev2: span [2000,2100) busy 100 (zero-length kernels cover nothing)
    # (the ids differ, which pairs by order unless pair-devices says otherwise: tests/test_compare_27.py)
    assert csv("ppu_time_util_compare:pair-devices=0=0", *pair_paths) == [
        TIME_UTIL_HEADER,
        f'1,"- / {GPU}","- / 100.0","- / 100","- / 100","-",2,',
        f'2,"{PPU} / {GPU}","57.1 / 74.4","350 / 430","200 / 320",0,0,',
        f'3,"{PPU} / -","66.7 / -","120 / -","80 / -",1,"-",',
    ]


def test_time_util_compare_full_range_mode(pair_paths):
    # full: the capture range of each report, base [0,350), target [1000,2100)
    assert csv("ppu_time_util_compare:range-mode=full:pair-devices=0=0", *pair_paths)[1:] == [
        f'1,"{PPU} / {GPU}","57.1 / 29.1","350 / 1100","200 / 320",0,0,',
        f'2,"{PPU} / -","22.9 / -","350 / -","80 / -",1,"-",',
        f'3,"- / {GPU}","- / 9.1","- / 1100","- / 100","-",2,',
    ]


@pytest.fixture
def pccl_paths(tmp_path):
    """base: pcclAllReduce twice ([0,100)+[20,110): overlap 80 of 110; [200,300) on both: no desync),
    pcclAllGather once ([400,450)+[440,460): overlap 10 of 60).
    target: pcclAllReduce once ([0,200) on both), ncclBroadcast alone [300,350)."""
    base = ReportWriter(tmp_path / "base.asysrep")
    devices(base, {0: PPU, 1: PPU})
    kernels(base, 0, [(0, 100), (200, 300), (400, 450)], ["pcclAllReduce", "pcclAllReduce", "pcclAllGather"])
    kernels(base, 1, [(20, 110), (200, 300), (440, 460)], ["pcclAllReduce", "pcclAllReduce", "pcclAllGather"])
    base.close()
    target = ReportWriter(tmp_path / "target.sqlite", dialect=NSYS)
    devices(target, {0: GPU, 1: GPU})
    kernels(target, 0, [(0, 200), (300, 350)], ["pcclAllReduce", "ncclBroadcast"])
    kernels(target, 1, [(0, 200)], ["pcclAllReduce"])
    target.close()
    return base.path, target.path


def test_pccl_desync_summary_compare_golden(pccl_paths):
    # base AllReduce: rates 27.27 and 0 -> P90 27.3 (nearest rank), avg 13.6; duration 210 of 270
    assert csv("pccl_desync_summary_compare", *pccl_paths) == [
        "Row#,Device Name,Time (%),Count,Desync P90 (%),Desync Avg (%),Total Duration (ns),Total Overlap (ns),"
        "Base Kernel,Target Kernel,",
        f'1,"{PPU} / {GPU}","77.8 / 80.0","2 / 1","27.3 / 0.0","13.6 / 0.0","210 / 200","180 / 200",'
        '"pcclAllReduce","pcclAllReduce",',
        f'2,"{PPU} / -","22.2 / -","1 / -","83.3 / -","83.3 / -","60 / -","10 / -","pcclAllGather","-",',
        f'3,"- / {GPU}","- / 20.0","- / 1","- / 0.0","- / 0.0","- / 50","- / 50","-","ncclBroadcast",',
    ]


def launches(writer, tid: int, calls: list[int], spans: list[tuple[int, int]], first_corr: int = 1) -> None:
    corr = list(range(first_corr, first_corr + len(calls)))
    writer.add("runtime", start=calls, end=[c + 10 for c in calls], globalTid=tid, correlationId=corr,
               nameId=writer.string("cudaLaunchKernel"))
    kernels(writer, 0, spans, ["k"] * len(spans), correlationId=corr)


@pytest.fixture
def hgtx_paths(tmp_path):
    """base:   step [0,1000) > attn [100,300); only_base [400,500); launches at 150, 350, 450
                 -> kernels [1000,1100) [1200,1500) [1600,1650)
    target: step [0,2000) > attn [100,300) attn [500,700) only_target [800,900); launches at 150, 550, 850
                 -> kernels [3000,3200) [3300,3400) [3500,3600)"""
    t = gtid(1)
    base = ReportWriter(tmp_path / "base.asysrep")
    devices(base, {0: PPU})
    base.add("hgtx", start=[0, 100, 400], end=[1000, 300, 500], eventType=PUSHPOP, text=["step", "attn", "only_base"],
             globalTid=t, domainId=0)
    launches(base, t, [150, 350, 450], [(1000, 1100), (1200, 1500), (1600, 1650)])
    base.close()
    target = ReportWriter(tmp_path / "target.sqlite", dialect=NSYS)
    devices(target, {0: GPU})
    target.add("hgtx", start=[0, 100, 500, 800], end=[2000, 300, 700, 900], eventType=PUSHPOP,
               text=["step", "attn", "attn", "only_target"], globalTid=t, domainId=0)
    launches(target, t, [150, 550, 850], [(3000, 3200), (3300, 3400), (3500, 3600)])
    target.close()
    return base.path, target.path


def test_hgtx_projection_summary_compare_golden(hgtx_paths):
    # In-Use over the PPU active range: base [1000,1650) = 650, target [3000,3600) = 600
    assert csv("hgtx_ppu_projection_summary_compare", *hgtx_paths) == [
        "Row#,Device Name,In-Use (%),Range Instance,Proj Avg (ns),Proj Avg Ratio,Proj Active Time (ns),"
        "Proj Active Ratio,Total Proj Time (ns),Total Proj Ratio,Total Range Time (ns),Total Range Ratio,"
        "Base Range,Target Range,",
        f'1,"{PPU} / {GPU}","100.0 / 100.0","1 / 1","650 / 600",0.9,"650 / 600",0.9,"650 / 600",0.9,'
        '"1000 / 2000",2.0,"step","step",',
        f'2,"{PPU} / {GPU}","15.4 / 50.0","1 / 2","100 / 150",1.5,"100 / 300",3.0,"100 / 300",3.0,'
        '"200 / 400",2.0,"attn","attn",',
        f'3,"- / {GPU}","- / 16.7","- / 1","- / 100","-","- / 100","-","- / 100","-","- / 100","-",'
        '"-","only_target",',
        f'4,"{PPU} / -","7.7 / -","1 / -","50 / -","-","50 / -","-","50 / -","-","100 / -","-",'
        '"only_base","-",',
    ]


def test_hgtx_projection_summary_compare_range_filters(hgtx_paths):
    lines = csv("hgtx_ppu_projection_summary_compare:range-exclude=^only:matched-only", *hgtx_paths)
    assert [line.rsplit(",", 3)[1] for line in lines[1:]] == ['"step"', '"attn"']


def test_pairs_in_json_are_lists_and_in_xlsx_numbers(pair_paths, tmp_path):
    run = run_cli("stats", "-r", "ppu_time_util_compare:pair-devices=0=0", "--format", "json", *pair_paths)
    assert run.code == 0, run.err
    rows = json.loads(run.out)
    assert rows[0] == {"Device Name": [None, GPU], "In-Use (%)": [None, 100.0], "Duration (ns)": [None, 100],
                       "PPU Active Time (ns)": [None, 100], "Base Device ID": None, "Target Device ID": 2}
    run = run_cli("stats", "-r", "ppu_time_util_compare:pair-devices=0=0", "--format", "xlsx", "-o", tmp_path / "x",
                  *pair_paths)
    assert run.code == 0, run.err
    sheet = openpyxl.load_workbook(tmp_path / "x_ppu_time_util_compare.xlsx").active
    assert [c.value for c in sheet[3]] == [2, f"{PPU} / {GPU}", 57.1, 74.4, 350, 430, 200, 320, 0, 0]


def test_column_format_aligns_pairs(pair_paths):
    run = run_cli("stats", "-r", "ppu_time_util_compare:pair-devices=0=0:column=Device Name/In-Use (%)", *pair_paths)
    # text pairs left-aligned, number pairs right-aligned
    assert run.out.splitlines() == [
        "Row#  Device Name" + " " * 12 + "   In-Use (%)",
        "----  -----------------------  -----------",
        f"   1  - / {GPU}" + " " * 9 + "    - / 100.0",
        f"   2  {PPU} / {GPU}  57.1 / 74.4",
        f"   3  {PPU} / -" + " " * 9 + "     66.7 / -",
    ]


def test_comparison_rules_need_two_reports(pair_paths):
    run = run_cli("stats", "-r", "ppu_kernel_summary_compare", pair_paths[0])
    assert run.code == 2 and "two reports" in run.err


def test_missing_data_in_one_report_names_it(pair_paths):
    run = run_cli("stats", "-r", "hgtx_ppu_projection_summary_compare", *pair_paths)
    assert run.code == 2 and "does not contain HGTX data" in run.err and run.err.count("\n") == 1


TWO_REPORT_RULES = [r for r in REGISTRY if r.reports == 2]
COMPARISONS = ("ppu_kernel_summary_compare", "ppu_time_util_compare", "pccl_desync_summary_compare",
               "hgtx_ppu_projection_summary_compare")


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    path = tmp_path_factory.mktemp("sample") / "s.asysrep"
    assert run_cli("sample", path, "--seed", "3").code == 0
    return path


@pytest.mark.parametrize("rule", COMPARISONS)
def test_a_report_compared_with_itself(sample, rule):
    from asysstats.core.result import PAIR_INNER, RATIO

    run = run_cli("stats", "-r", rule, "--format", "json", sample, sample)
    assert run.code == 0, run.err
    rows = json.loads(run.out)
    assert rows
    for column in REGISTRY.get(rule).columns:
        values = [row[column.name] for row in rows]
        if column.kind in PAIR_INNER:
            assert all(base == target and base is not None for base, target in values), column.name
        elif column.kind == RATIO:
            assert all(v == 1.0 for v in values), column.name
        elif column.name.startswith("Base "):
            assert values == [row[column.name.replace("Base ", "Target ", 1)] for row in rows]


def corpus_pairs():
    """Each corpus file with the next one (one skipped pair when the corpus is absent: a param
    holds a value per name, which pytest 9.2 checks even for a skipped one)."""
    if not NSYS_FILES:
        return [pytest.param(None, None, marks=CORPUS_ABSENT)]
    return [pytest.param(p, NSYS_FILES[(i + 1) % len(NSYS_FILES)], id=p.stem) for i, p in enumerate(NSYS_FILES)]


@pytest.mark.parametrize("path, other", corpus_pairs())
def test_corpus_pairs(path, other):
    before = fingerprint(path), fingerprint(other)
    for rule in TWO_REPORT_RULES:
        run = run_cli("stats", "-r", rule.name, "--format", "csv", path, other)
        assert run.code in (0, 2), run.err
        assert "Traceback" not in run.err and "internal error" not in run.err
        if run.code == 2:
            assert "does not contain" in run.err
        else:
            assert run.out.startswith("Row#,Device Name,")
    assert (fingerprint(path), fingerprint(other)) == before


@pytest.fixture(scope="module")
def empty_report(tmp_path_factory):
    """Every table exists, none has rows."""
    writer = ReportWriter(tmp_path_factory.mktemp("empty") / "empty.asysrep")
    for name in TABLES:
        if name not in ENUMS:
            writer.create(name)
    writer.close()
    return writer.path


@pytest.mark.parametrize("rule", TWO_REPORT_RULES, ids=lambda r: r.name)
def test_empty_reports_give_the_declared_header(rule, empty_report):
    run = run_cli("stats", "-r", rule.name, "--format", "csv", empty_report, empty_report)
    assert run.code == 0, run.err
    printed = rule.select_columns(None, rule.options())  # without the optional columns their flags leave off
    assert run.out.splitlines() == [",".join(["Row#"] + [c.name for c in printed]) + ","]


@pytest.mark.parametrize("rule", TWO_REPORT_RULES, ids=lambda r: r.name)
def test_bad_option_values_are_one_line_errors(rule, empty_report):
    run = run_cli("stats", "-r", f"{rule.name}:no-such-option", empty_report, empty_report)
    assert run.code == 2 and run.err.count("\n") == 1 and "no-such-option" in run.err
    for option in rule.all_options:
        if option.kind in ("int", "int_list"):
            run = run_cli("stats", "-r", f"{rule.name}:{option.name}=ten", empty_report, empty_report)
            assert run.code == 2 and run.err.count("\n") == 1 and f"'{option.name}'" in run.err
