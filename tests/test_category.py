"""hggc_ppu_kern_category_sum: golden output, configuration handling, brute force, and the
corpus against the hand-written Nsight summary script it replaces."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.rulebook import REGISTRY
from asysstats.synth.writer import ReportWriter

from conftest import corpus_params, fingerprint, run_cli

RULE = "hggc_ppu_kern_category_sum"
HEADER = "Row#,Category,Total Time (ns),Time (%),Launches,Avg (ns),"
GROUPS = ("attention=attn", "gemm=gemm_fp16", "half=fp16", "gemm=gemm_int8", "norm=norm|rope", "unused=no_such")


def config(*items: str) -> list[str]:
    return [arg for item in items for arg in ("--kernel-group-config", item)]


def build(writer):
    """Kernels on two devices, overlapping in time (the category sums durations, not unions).

        dev0  attn [0,100)  gemm_fp16 [100,400)  rmsnorm [400,430)  copy [430,500)
        dev1  attn [50,150) gemm_int8 [150,250)  copy [250,270)
    """
    names = writer.strings(["_Z11attn_kernelPf", "_Z9gemm_fp16Pf", "_Z9gemm_int8Pf", "_Z7rmsnormPf", "_Z4copyPf"])
    attn, fp16, int8, norm, copy = names
    kernels = [attn, fp16, norm, copy, attn, int8, copy]
    writer.add("kernels", start=[0, 100, 400, 430, 50, 150, 250], end=[100, 400, 430, 500, 150, 250, 270],
               deviceId=[0, 0, 0, 0, 1, 1, 1], correlationId=list(range(1, 8)), globalPid=1 << 24,
               demangledName=kernels, shortName=kernels, mangledName=kernels)
    writer.close()
    return writer.path


def test_golden_csv(writer):
    run = run_cli("stats", "-r", RULE, *config(*GROUPS), "--format", "csv", build(writer))
    assert run.code == 0, run.err
    assert run.out.splitlines() == [
        HEADER,
        '1,"gemm",400,55.6,2,200,',    # both gemm_ items: a repeated name adds alternatives
        '2,"attention",200,27.8,2,100,',
        '3,"other",90,12.5,2,45,',
        '4,"norm",30,4.2,1,30,',
        '5,"half",0,0.0,0,"-",',       # gemm_fp16 matched 'gemm' first: first match wins
        '6,"unused",0,0.0,0,"-",',     # a regex that matches nothing still lists its category
    ]


@pytest.mark.parametrize("option, expected", [
    ("device=1", ['1,"attention",100,45.5,1,100,', '2,"gemm",100,45.5,1,100,', '3,"other",20,9.1,1,20,',
                  '4,"half",0,0.0,0,"-",', '5,"norm",0,0.0,0,"-",', '6,"unused",0,0.0,0,"-",']),
    ("base:rows=2", ['1,"gemm",400,55.6,2,200,', '2,"attention",200,27.8,2,100,']),
])
def test_options(writer, option, expected):
    run = run_cli("stats", "-r", f"{RULE}:{option}", *config(*GROUPS), "--format", "csv", build(writer))
    assert run.code == 0, run.err
    assert run.out.splitlines()[1:] == expected


def test_name_mode_decides_what_is_matched(writer):
    path = build(writer)
    mangled = run_cli("stats", "-r", f"{RULE}:mangled", *config("plain=^_Z.*Pf$"), "--format", "csv", path)
    demangled = run_cli("stats", "-r", RULE, *config("plain=^_Z.*Pf$"), "--format", "csv", path)
    base = run_cli("stats", "-r", f"{RULE}:base", *config(r"plain=^\w+$"), "--format", "csv", path)
    assert mangled.out.splitlines()[1:] == base.out.splitlines()[1:] == \
        ['1,"plain",720,100.0,7,102,', '2,"other",0,0.0,0,"-",']
    assert demangled.out.splitlines()[1:] == ['1,"other",720,100.0,7,102,', '2,"plain",0,0.0,0,"-",']


def test_without_configuration_everything_is_other(writer):
    run = run_cli("stats", "-r", RULE, "--format", "csv", build(writer))
    assert run.out.splitlines()[1:] == ['1,"other",720,100.0,7,102,']


def test_no_kernel_on_the_selected_devices_prints_the_header_only(writer):
    run = run_cli("stats", "-r", f"{RULE}:device=7", *config(*GROUPS), "--format", "csv", build(writer))
    assert (run.code, run.out) == (0, HEADER + "\n")


def test_config_file_equals_repeated_options(writer, tmp_path):
    path = build(writer)
    groups = tmp_path / "groups.txt"
    groups.write_text("# categories, first match wins\n\n" + "\n".join(GROUPS) + "\n", encoding="utf-8")
    from_file = run_cli("stats", "-r", RULE, "--kernel-group-config", f"@{groups}", "--format", "csv", path)
    inline = run_cli("stats", "-r", RULE, *config(*GROUPS), "--format", "csv", path)
    assert from_file.code == 0, from_file.err
    assert from_file.out == inline.out and from_file.out.count("\n") == 7


@pytest.mark.parametrize("items, culprit", [
    (("ok=attn", "bad=(unclosed"), "(unclosed"),
    (("no_equals_sign",), "no_equals_sign"),
])
def test_bad_configuration_is_a_one_line_error(writer, items, culprit):
    run = run_cli("stats", "-r", RULE, *config(*items), build(writer))
    assert run.code == 2 and run.err.count("\n") == 1
    assert "--kernel-group-config" in run.err and culprit in run.err and "Traceback" not in run.err


def test_each_distinct_name_is_matched_once_per_regex(writer, monkeypatch):
    import asysstats.rulebook.category as category

    calls: list[tuple[str, str]] = []
    real = category.search
    monkeypatch.setattr(category, "search", lambda p, text, where: calls.append((p.pattern, text)) or real(p, text, where))
    run = run_cli("stats", "-r", RULE, *config(*GROUPS), build(writer))
    assert run.code == 0, run.err
    assert len(calls) == len(set(calls)) and len({text for _, text in calls}) == 5  # 7 kernels, 5 names


def test_json_is_typed(writer):
    run = run_cli("stats", "-r", RULE, *config(*GROUPS), "--format", "json", build(writer))
    rows = json.loads(run.out)
    assert rows[0] == {"Category": "gemm", "Total Time (ns)": 400, "Time (%)": 55.6, "Launches": 2, "Avg (ns)": 200}
    assert rows[-1] == {"Category": "unused", "Total Time (ns)": 0, "Time (%)": 0.0, "Launches": 0, "Avg (ns)": None}


# -- brute force --------------------------------------------------------------------------

NAMES = ["alpha_k", "beta_k", "gamma", "alphabet", "delta"]
PATTERNS = ["alpha", "beta|gamma", "^del", "k$", "zzz", "a"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(NAMES), st.integers(0, 50)), min_size=1, max_size=15),
       st.lists(st.tuples(st.sampled_from(["a", "b", "c", "other"]), st.sampled_from(PATTERNS)), max_size=5))
def test_matches_brute_force(tmp_path_factory, kernels, groups):
    writer = ReportWriter(tmp_path_factory.mktemp("category") / "r.asysrep")
    ids = writer.strings([n for n, _ in kernels])
    writer.add("kernels", start=[0] * len(kernels), end=[d for _, d in kernels], deviceId=0,
               demangledName=ids, shortName=ids, mangledName=ids)
    writer.close()
    run = run_cli("stats", "-r", RULE, *config(*(f"{g}={p}" for g, p in groups)), "--format", "json", writer.path)
    assert run.code == 0, run.err
    labels = list(dict.fromkeys([g for g, _ in groups] + ["other"]))
    total = dict.fromkeys(labels, 0)
    count = dict.fromkeys(labels, 0)
    for name, duration in kernels:
        label = next((g for g, p in groups if re.search(p, name)), "other")
        total[label] += duration
        count[label] += 1
    grand = sum(total.values())
    expected = [{"Category": c, "Total Time (ns)": total[c],
                 "Time (%)": None if grand == 0 else math.floor(total[c] * 1000 / grand + 0.5 + 1e-9) / 10,
                 "Launches": count[c], "Avg (ns)": total[c] // count[c] if count[c] else None}
                for c in sorted(labels, key=lambda c: (-total[c], c))]
    assert json.loads(run.out) == expected


# -- the corpus, and the script this rule replaces ----------------------------------------

SCRIPT = Path("/work/shared/spec/nsys-category-summary-example.py.txt")
SCRIPT_GROUPS = {  # the script's category() substrings, in its order
    "sage2": ("qk_int_sv_f8_attn_kernel", "MeanScaleKernel", "TransposePadPermuteKernel", "QuantInt8Kernel"),
    "nvfp4_gemms": ("cutlass3x_sm120_bstensorop",),
    "nvfp4_packing": ("partial_absmax_", "quantize_nvfp4_", "quantize_nvfp4_kernel", "final_scale_",
                      "FillFunctor<unsigned char>"),
    "norm_and_rope": ("rope_kernel", "vectorized_layer_norm_kernel", "MeanOps<c10::BFloat16"),
    "remaining_gate_add": ("_gate_add_kernel",),
}
TRACE_RULES = ("hggc_ppu_trace", "hggc_kern_exec_trace")


def script_config() -> list[str]:
    return config(*(f"{name}={'|'.join(re.escape(t) for t in tokens)}" for name, tokens in SCRIPT_GROUPS.items()))


def rule_csv(path: Path, rule: str, out: Path) -> Path:
    """A trace rule's CSV with the '-' cells made empty, as the script's ``if row["GrdX"]`` expects."""
    run = run_cli("stats", "-r", rule, "--format", "csv", path)
    assert run.code == 0, run.err
    rows = [["" if cell == "-" else cell for cell in row] for row in csv.reader(io.StringIO(run.out))]
    with out.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    return out


def run_script(gpu_trace: Path, exec_trace: Path, output: Path, monkeypatch) -> dict:
    """The script's own main(), unmodified (its first line is the path it was published under)."""
    source = SCRIPT.read_text(encoding="utf-8").split("\n", 1)[1]
    namespace: dict = {"__name__": "nsys_category_summary"}
    exec(compile(source, str(SCRIPT), "exec"), namespace)
    monkeypatch.setattr(sys, "argv", ["summarize", "--gpu-trace", str(gpu_trace),
                                      "--kernel-exec-trace", str(exec_trace), "--output", str(output)])
    with contextlib.redirect_stdout(io.StringIO()):
        namespace["main"]()
    return json.loads(output.read_text(encoding="utf-8"))


def one_decimal(value: float) -> float:
    return math.floor(value * 10 + 0.5 + 1e-9) / 10


def assert_same_as_script(path: Path, tmp_path: Path, monkeypatch) -> None:
    """Both rules' figures equal the script's, run on our trace rules' CSVs of the same report."""
    category = run_cli("stats", "-r", RULE, *script_config(), "--format", "json", path)
    timeline = run_cli("stats", "-r", "hggc_ppu_timeline_sum", "--format", "json", path)
    assert category.code == timeline.code == 0, category.err + timeline.err
    report = run_script(rule_csv(path, "hggc_ppu_trace", tmp_path / "gpu.csv"),
                        rule_csv(path, "hggc_kern_exec_trace", tmp_path / "exec.csv"), tmp_path / "out.json",
                        monkeypatch)
    rows = {r["Category"]: r for r in json.loads(category.out)}
    assert set(rows) == set(report["components"])
    for name, component in report["components"].items():
        row = rows[name]
        assert row["Total Time (ns)"] / 1.0e6 == component["milliseconds"]
        assert row["Launches"] == component["launches"]
        assert row["Time (%)"] == one_decimal(component["percent_of_kernel_time"])
    every = json.loads(timeline.out)[0]
    gaps, overlap = report["launch_gaps"], report["cpu_gpu_overlap"]
    assert every["Device"] == "All"
    assert [every["Span (ns)"], every["Operations"], every["Kernels"], every["Kernel Time (ns)"],
            every["Kernel Busy (%)"]] == [report["gpu_span_ns"], report["gpu_operation_count"],
                                          report["kernel_count"], report["kernel_time_ns"],
                                          one_decimal(report["kernel_busy_percent_of_span"])]
    # where the script prints 0 for an undefined average, maximum or percentage, the rule prints '-'
    assert [every["Gap Count"], every["Gap Total (ns)"], every["Gap Avg (ns)"] or 0, every["Gap Max (ns)"] or 0] == \
        [gaps["positive_gap_count"], gaps["total_ns"], int(gaps["average_ns"]), gaps["maximum_ns"]]
    assert [every["Launch API Union (ns)"], every["Launch API Overlap (ns)"], every["Launch API Overlap (%)"] or 0] \
        == [overlap["launch_api_union_ns"], overlap["launch_api_gpu_overlap_ns"],
            one_decimal(overlap["launch_api_overlap_percent"])]


def needs_trace_rules() -> None:
    missing = [r for r in TRACE_RULES if r not in REGISTRY]
    if missing:
        pytest.skip(f"rules {missing} are not registered")


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_matches_the_summary_script(path, tmp_path, monkeypatch):
    needs_trace_rules()
    before = fingerprint(path)
    run = run_cli("stats", "-r", RULE, "--format", "csv", path)
    if run.code == 2:
        assert "does not contain CUDA kernel data" in run.err and "Traceback" not in run.err
        pytest.skip("no kernels: the script cannot run (it divides by the kernel time)")
    assert_same_as_script(path, tmp_path, monkeypatch)
    assert fingerprint(path) == before


SCRIPT_NAMES = [  # every script category, a name in two (the first wins), and names in none
    "qk_int_sv_f8_attn_kernel<128, 64>", "MeanScaleKernel", "QuantInt8Kernel_gate_add_kernel",
    "cutlass3x_sm120_bstensorop_s16864gemm_block_scaled", "quantize_nvfp4_kernel(float*)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<unsigned char>>",
    "FillFunctor<unsigned short>", "rope_kernel", "MeanOps<c10::BFloat16, float>", "fused_gate_add_kernel",
    "flash_fwd_kernel", "elementwise_add",
]


def test_script_categories_on_a_busy_two_device_report(writer, tmp_path, monkeypatch):
    """The corpus names fall in 'other' only: here every category of the script is used,
    with kernels overlapping on two devices, memcpy, memset and unmatched API calls."""
    needs_trace_rules()
    rng = np.random.default_rng(11)
    n = 60
    names = writer.strings(SCRIPT_NAMES)[rng.integers(0, len(SCRIPT_NAMES), n)]
    start = np.cumsum(rng.integers(0, 400, n))
    end = start + rng.integers(1, 700, n)
    api_start = start - rng.integers(0, 300, n)
    launch = writer.string("cudaLaunchKernel")
    writer.add("kernels", start=start, end=end, deviceId=rng.integers(0, 2, n), correlationId=np.arange(1, n + 1),
               globalPid=3 << 24, demangledName=names, shortName=names, mangledName=names, gridX=1, gridY=1,
               gridZ=1, blockX=32, blockY=1, blockZ=1, streamId=rng.integers(1, 3, n))
    writer.add("memcpy", start=[5, 9000], end=[40, 9100], deviceId=[1, 0], correlationId=[500, 501], bytes=64,
               copyKind=1, srcKind=1, dstKind=3)
    writer.add("memset", start=[20000], end=[20010], deviceId=[1], correlationId=[502], bytes=8, memKind=3)
    writer.add("runtime", start=np.append(api_start, [0, 8990]), end=np.append(api_start + rng.integers(5, 200, n),
               [50, 9010]), correlationId=np.append(np.arange(1, n + 1), [500, 501]), globalTid=(3 << 24) + 3,
               nameId=launch)
    writer.close()
    assert_same_as_script(writer.path, tmp_path, monkeypatch)
    launches = {r["Category"]: r["Launches"] for r in json.loads(run_cli(
        "stats", "-r", RULE, *script_config(), "--format", "json", writer.path).out)}
    assert all(launches.values()), launches  # every category was exercised


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_smoke(path):
    before = fingerprint(path)
    run = run_cli("stats", "-r", RULE, *script_config(), "--format", "csv", path)
    assert "Traceback" not in run.err
    if run.code == 2:
        assert "does not contain CUDA kernel data" in run.err
    else:
        assert run.code == 0, run.err
        assert run.out.startswith(HEADER) and '"other"' in run.out and run.out.count("\n") == 7
    assert fingerprint(path) == before
