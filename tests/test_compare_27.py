"""Issue 27 §4, `asys compare` that a user can act on: operators match without PyTorch's per-run
ids, rows of one report are listed apart (and GPU work without its launch can be left out),
devices of other ids pair by order (or as asked), and JSON carries numbers."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3

import pytest

import asysstats
from asysstats.analysis.operators.parsers import without_run_ids
from asysstats.rulebook.compare_operators import match_key
from asysstats.synth.writer import NSYS, ReportWriter

from conftest import CORPUS, run_cli
from test_compare_operators import GPU, PPU, PUSHPOP, op_paths, report  # noqa: F401
from test_compare_rules import pair_paths  # noqa: F401

KINETO, NSIGHT = CORPUS / "kineto", CORPUS / "nsys"
H100, MI300 = KINETO / "tracelens_h100_bert.json.gz", KINETO / "tracelens_mi300_bert.json.gz"
RANK0, RANK1 = KINETO / "hta_sampled_r0.json.gz", KINETO / "hta_sampled_r1.json.gz"
DLPROF, FUSER = NSIGHT / "dlprof_relu.sqlite", NSIGHT / "fuser_hopper_r1.sqlite"
needs = {name: pytest.mark.skipif(not all(p.exists() for p in paths), reason="corpus absent")
         for name, paths in (("bert", (H100, MI300)), ("ranks", (RANK0, RANK1)), ("nsys", (DLPROF, FUSER)))}


def rows(rule: str, base, target, *extra) -> list[dict]:
    run = run_cli("stats", "-r", rule, "--format", "json", *extra, base, target)
    assert run.code == 0, run.err
    return json.loads(run.out)


def compare(base, target, out, *extra) -> list[str]:
    run = run_cli("compare", "-o", out, *extra, base, target)
    assert run.code == 0, run.err
    return run.out.splitlines()


# -- 1. operator identity --------------------------------------------------------------------------
@pytest.mark.parametrize("text, shown", [
    ("aten::mm, seq = 12, op_id = 345, sizes = [[8, 4], [4, 2]], input_op_ids = [(344,0), (0,-1)]",
     "aten::mm, sizes = [[8, 4], [4, 2]]"),
    ("aten::conv2d, seq = 0", "aten::conv2d"),  # emit_nvtx of PyTorch 1.10 (dlprof_relu)
    ("aten::linear, sizes = [[1, 141, 512], [512, 512], [512]]",) * 2,  # Kineto's: no ids to remove
    ("GemmEx,t,n,64,64,64", "GemmEx,t,n,64,64,64"),
])
def test_names_lose_only_the_per_run_ids(text, shown):
    assert without_run_ids(text) == shown


def test_merge_keys_match_without_the_per_run_ids():
    kept = "PyTorch|PyTorch|op=aten::relu,seq={0},op_id={1},sizes=[[8]],input_op_ids=[({2},0)]"
    assert match_key(kept.format(1, 5, 4)) == match_key(kept.format(7, 99, 98)) == "pytorch||op=aten::relu,sizes=[[8]]"
    assert match_key(kept.format(1, 5, 4)) != match_key(kept.format(1, 5, 4).replace("[[8]]", "[[9]]"))


RELU = "aten::relu, seq = {0}, op_id = {1}, sizes = [[8]], input_op_ids = [({2},0)]"
MM = "aten::mm, seq = {0}, op_id = {1}, sizes = [[8, 4], [4, 2]]"


@pytest.fixture
def runs(tmp_path):
    """Two runs of one model (other seq / op_id), each operator a range around one kernel:
    base:   relu [0,100) k_relu 40 ns, mm [200,300) k_mm 100 ns, mm [400,500) k_mm 100 ns
    target: relu [0,100) k_relu 60 ns, mm [200,300) k_mm 150 ns, mm [400,500) k_mm 150 ns"""
    base, target = tmp_path / "run1.asysrep", tmp_path / "run2.sqlite"
    report(base, "asysrep", PPU, [(RELU.format(1, 10, 9), 0, 100, "k_relu", (1000, 1040)),
                                  (MM.format(2, 20), 200, 300, "k_mm", (1200, 1300)),
                                  (MM.format(3, 30), 400, 500, "k_mm", (1400, 1500))])
    report(target, NSYS, GPU, [(RELU.format(51, 510, 509), 0, 100, "k_relu", (2000, 2060)),
                               (MM.format(52, 520), 200, 300, "k_mm", (2200, 2350)),
                               (MM.format(53, 530), 400, 500, "k_mm", (2400, 2550))])
    return base, target


def test_an_operator_of_two_runs_is_one_row_named_without_its_ids(runs):
    table = rows("ppu_operator_summary_compare", *runs)
    assert [(r["Base OP Name"], r["Target OP Name"], r["Total (ns)"], r["Total Ratio"]) for r in table] == [
        ("aten::mm, sizes = [[8, 4], [4, 2]]", "aten::mm, sizes = [[8, 4], [4, 2]]", [200, 300], 1.5),
        ("aten::relu, sizes = [[8]]", "aten::relu, sizes = [[8]]", [40, 60], 1.5),
    ]
    types = rows("ppu_operator_type_summary_compare", *runs)
    assert types[1]["Base Top OP Name"] == types[1]["Target Top OP Name"] == "aten::mm, sizes = [[8, 4], [4, 2]]"


def test_the_breakdown_and_the_projection_match_the_runs_operators(runs):
    breakdown = rows("ppu_operator_kernel_breakdown_compare", *runs)
    assert [(r["Base Framework OP"], r["Target Framework OP"], r["Avg Ratio"]) for r in breakdown] == [
        ("aten::mm, sizes = [[8, 4], [4, 2]]", "aten::mm, sizes = [[8, 4], [4, 2]]", 1.5),
        ("aten::relu, sizes = [[8]]", "aten::relu, sizes = [[8]]", 1.5)]
    ranges = rows("hgtx_ppu_projection_summary_compare", *runs)
    # three ranges a run; the two mm ranges share a name once their ids are gone: they pair in order
    assert [(r["Base Range"], r["Target Range"], r["Total Proj Ratio"]) for r in ranges] == [
        ("aten::mm, sizes = [[8, 4], [4, 2]]", "aten::mm, sizes = [[8, 4], [4, 2]]", 1.5),
        ("aten::mm, sizes = [[8, 4], [4, 2]]", "aten::mm, sizes = [[8, 4], [4, 2]]", 1.5),
        ("aten::relu, sizes = [[8]]", "aten::relu, sizes = [[8]]", 1.5)]


def test_kept_apart_by_their_ids_operators_show_them_and_still_match(runs):
    table = rows("ppu_operator_summary_compare:no-merge-pytorch-parameter", *runs)
    assert [(r["Base OP Name"], r["Target OP Name"], r["Total Ratio"]) for r in table] == [
        (MM.format(2, 20), MM.format(52, 520), 1.5), (MM.format(3, 30), MM.format(53, 530), 1.5),
        (RELU.format(1, 10, 9), RELU.format(51, 510, 509), 1.5)]


@pytest.fixture(scope="module")
def reseeded(tmp_path_factory):
    """dlprof_relu (emit_nvtx: ``aten::conv2d, seq = 0``) and a copy whose seq numbers are 100 more."""
    folder = tmp_path_factory.mktemp("dlprof")
    shutil.copy(DLPROF, folder / "run1.sqlite")
    shutil.copy(DLPROF, folder / "run2.sqlite")
    (folder / "run2.sqlite").chmod(0o644)
    with sqlite3.connect(folder / "run2.sqlite") as db:
        for rowid, text in db.execute("SELECT rowid, text FROM NVTX_EVENTS WHERE text LIKE '%seq = %'").fetchall():
            text = re.sub(r"seq = (\d+)", lambda found: f"seq = {int(found[1]) + 100}", text)
            db.execute("UPDATE NVTX_EVENTS SET text = ? WHERE rowid = ?", (text, rowid))
    return folder / "run1.sqlite", folder / "run2.sqlite"


@needs["nsys"]
@pytest.mark.parametrize("rule", ["ppu_operator_summary_compare", "ppu_operator_kernel_breakdown_compare",
                                  "hgtx_ppu_projection_summary_compare"])
def test_real_emit_nvtx_runs_with_other_seq_numbers_match_row_for_row(reseeded, rule):
    table = rows(rule, *reseeded)
    assert len(table) > 5
    for row in table:
        for name, value in row.items():
            if name.endswith("Ratio"):
                assert value in (1.0, None), (name, row)
            elif isinstance(value, list):
                assert value[0] == value[1], (name, row)
            assert not (isinstance(value, str) and "seq = " in value), row
    names = {row.get("Base OP Name") or row.get("Base Framework OP") or row.get("Base Range") for row in table}
    assert "aten::conv2d" in names


# -- 2. one-sided rows ----------------------------------------------------------------------------------
def summary_block(lines: list[str], title: str) -> list[str]:
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    block = [lines[start]]
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        block.append(line)
    return block


def test_operators_of_one_report_are_added_or_removed_never_a_change(op_paths, tmp_path):
    # base: GEMM m64 200 ns, relu 50, GEMM m128 40 (base only); target: GEMM m64 150, relu 100, add 10 (target only)
    lines = compare(*op_paths, tmp_path / "c")
    assert summary_block(lines, "Top regressions") == [
        "Top regressions (slower in target):",
        "  +0.00 ms  0.00 ms -> 0.00 ms (2.00x)  [PyTorch] aten::relu, sizes = [[8]]"]
    improvements = summary_block(lines, "Top improvements")
    assert len(improvements) == 2 and "(0.75x)  [GEMM] CUBLAS:GemmEx,t,n,64," in improvements[1]
    assert summary_block(lines, "Added operators") == [
        "Added operators (in the target only): 1, 0.00 ms in all", "  0.00 ms  [PyTorch] aten::add, sizes = [[8], [8]]"]
    removed = summary_block(lines, "Removed operators")
    assert removed[0] == "Removed operators (in the base only): 1, 0.00 ms in all" and "GemmEx,t,n,128," in removed[1]


@pytest.fixture
def unlaunched(tmp_path):
    """One thread, kernels on device 0 (k_early's launch was before the window: no API call):
    base:   k_early [0,50) corr 7 (no call), k_work [100,200) corr 1
    target: k_early [0,80) corr 7 (no call), k_work [100,160) corr 1"""
    paths = []
    for name, early, work in (("base.asysrep", 50, 200), ("target.asysrep", 80, 160)):
        writer = ReportWriter(tmp_path / name)
        writer.add("devices", id=[0], name=[PPU])
        writer.add("runtime", start=[90], end=[95], globalTid=(1 << 24) | 1, correlationId=[1],
                   nameId=writer.string("cudaLaunchKernel"))
        names = writer.strings(["k_early", "k_work"])
        writer.add("kernels", start=[0, 100], end=[early, work], deviceId=0, correlationId=[7, 1],
                   demangledName=names, shortName=names, mangledName=names, globalPid=1 << 24)
        writer.close()
        paths.append(writer.path)
    return paths


def test_linked_only_leaves_out_the_work_launched_before_the_window(unlaunched, tmp_path):
    opened = [asysstats.open(path, linked_only=True) for path in unlaunched]
    with pytest.warns(asysstats.Note, match="1 kernels rows without their launching API call in the report left out"):
        table = asysstats.compare(*opened, rules=["ppu_kernel_summary_compare"])["ppu_kernel_summary_compare"]
    assert table.column("Base Kernel").to_pylist() == ["k_work"] and table.column("Total Ratio").to_pylist() == [0.6]
    everything = rows("ppu_kernel_summary_compare", *unlaunched)
    assert [r["Base Kernel"] for r in everything] == ["k_work", "k_early"]
    lines = compare(*unlaunched, tmp_path / "c", "--linked-only")
    assert "k_early" not in "\n".join(lines)
    assert any(line.startswith("note: base.asysrep: 1 kernels rows") for line in lines)
    kernels = (tmp_path / "c_ppu_kernel_summary_compare.csv").read_text().splitlines()
    assert len(kernels) == 2 and '"k_work","k_work"' in kernels[1]


@needs["ranks"]
def test_two_ranks_top_changes_are_of_operators_of_both(tmp_path):
    lines = compare(RANK0, RANK1, tmp_path / "ranks")
    changes = summary_block(lines, "Top regressions")[1:] + summary_block(lines, "Top improvements")[1:]
    assert len(changes) == 6 and not any(" 0.00 ms -> " in line or "-> 0.00 ms" in line for line in changes)
    added, removed = summary_block(lines, "Added operators"), summary_block(lines, "Removed operators")
    # operators match by their recorded shapes and data types: a few differ in types across the ranks
    assert added[0] == "Added operators (in the target only): 123, 223.41 ms in all"
    assert removed[0] == "Removed operators (in the base only): 134, 188.37 ms in all"
    assert removed[1].startswith("  130.61 ms  [PCCL] c10d::alltoall_base_")


@needs["nsys"]
def test_two_real_exports_list_apart_what_one_of_them_has(tmp_path):
    # an RTX 2070 PyTorch CNN against an H200 nvFuser benchmark: no operator in common
    lines = compare(DLPROF, FUSER, tmp_path / "nsys")
    assert [line for line in lines if line.startswith(("Added", "Removed", "Top"))] == [
        "Top regressions (slower in target): none", "Top improvements (faster in target): none",
        "Added operators (in the target only): 1, 0.09 ms in all",
        "Removed operators (in the base only): 6, 2.78 ms in all"]
    assert summary_block(lines, "Removed operators")[1] == "  2.45 ms  [PyTorch] aten::conv2d"


# -- 3. devices ----------------------------------------------------------------------------------------
def test_devices_of_other_ids_pair_by_order_with_a_note(pair_paths):
    # base devices 0 and 1, target 0 and 2: 0=0, 1=2
    run = run_cli("stats", "-r", "ppu_time_util_compare", "--format", "csv", *pair_paths)
    assert run.code == 0, run.err
    assert run.out.splitlines()[1:] == [f'1,"{PPU} / {GPU}","66.7 / 100.0","120 / 100","80 / 100",1,2,',
                                        f'2,"{PPU} / {GPU}","57.1 / 74.4","350 / 430","200 / 320",0,0,']
    assert "devices paired by order: base=target 0=0, 1=2 (pair-devices=B=T pairs them otherwise)" in run.err


def test_pair_devices_pairs_as_asked_and_names_a_device_a_report_lacks(pair_paths, tmp_path):
    table = rows("ppu_time_util_compare:pair-devices=1=0", *pair_paths)
    assert [(r["Base Device ID"], r["Target Device ID"]) for r in table] == [(None, 2), (1, 0), (0, None)]
    run = run_cli("stats", "-r", "ppu_time_util_compare:pair-devices=1=3", *pair_paths)
    assert run.code == 2 and run.err == ("error: rule 'ppu_time_util_compare': option 'pair-devices' item '1=3': "
                                         "the target report has no device 3 (its devices: 0, 2)\n")
    lines = compare(*pair_paths, tmp_path / "c", "--pair-devices", "0=2,1=0")
    assert summary_block(lines, "PPU time utilisation") == [
        "PPU time utilisation per device:",
        "  device 0 / 2: in-use 57.1% -> 100.0%, active 0.00 ms -> 0.00 ms (0.50x)",
        "  device 1 / 0: in-use 66.7% -> 74.4%, active 0.00 ms -> 0.00 ms (4.00x)"]


@needs["bert"]
def test_an_h100_and_an_mi300_device_pair(tmp_path):
    # the H100 trace runs on device 0, the MI300 trace on device 2
    lines = compare(H100, MI300, tmp_path / "bert")
    assert summary_block(lines, "PPU time utilisation") == [
        "PPU time utilisation per device:", "  device 0 / 2: in-use 7.9% -> 11.2%, active 0.31 ms -> 0.39 ms (1.26x)"]
    assert "note: ppu_time_util_compare: the reports' device ids differ; devices paired by order: base=target 0=2 " \
           "(pair-devices=B=T pairs them otherwise)" in lines


@needs["ranks"]
def test_rank_0_and_rank_1_devices_pair():
    table = rows("ppu_time_util_compare", RANK0, RANK1)
    assert [(r["Base Device ID"], r["Target Device ID"]) for r in table] == [(0, 1)]
    assert all(None not in r["In-Use (%)"] for r in table)


# -- 4. numbers for machines ------------------------------------------------------------------------------
def test_json_cells_are_numbers_that_sort_and_sum(runs):
    table = rows("ppu_kernel_summary_compare", *runs)
    assert [(r["Total (ns)"], r["Total Ratio"]) for r in table] == [([200, 300], 1.5), ([40, 60], 1.5)]
    assert sum(r["Total (ns)"][1] for r in table) == 360
    csv_run = run_cli("stats", "-r", "ppu_kernel_summary_compare", "--format", "csv", *runs)
    assert '"200 / 300",1.5' in csv_run.out  # CSV keeps the reference's cells


@needs["bert"]
def test_json_of_real_traces_carries_numbers():
    table = rows("ppu_operator_summary_compare", H100, MI300)
    assert all(isinstance(side, (int, float)) for r in table for side in r["Total (ns)"])
    assert all(isinstance(r["Total Ratio"], float) for r in table)
