"""asys analyze: ppu_short_kernel_histogram and ppu_short_kernels (TraceLens's short-kernel
study, docs/decisions.md D39): a timeline drawn here, a brute-force property test, every corpus
file, and TraceLens's short_kernel_histogram.csv / short_kernels_summary.csv reproduced."""

from __future__ import annotations

import ast
import csv as csvlib
import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from conftest import CORPUS, corpus_params, run_cli
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_kineto import gpu, write_trace, x

import asysstats
from asysstats.synth.writer import ReportWriter

KINETO = CORPUS / "kineto"
GOLDENS = sorted(KINETO.glob("tracelens_*.golden/short_kernel_histogram.csv")) if KINETO.is_dir() else []
TRACES = sorted(KINETO.glob("*.json.gz")) if KINETO.is_dir() else []
HISTOGRAM, SUMMARY = "ppu_short_kernel_histogram", "ppu_short_kernels"


def rows(path, rule: str) -> list[dict]:
    run = run_cli("analyze", "-r", rule, "--format", "json", path)
    assert run.code == 0 and "Traceback" not in run.err, run.err
    return json.loads(run.out)


def api_rows(path, rule: str, **options) -> list[dict]:
    with asysstats.open(path) as report:
        return report.analyze(rule, **options).to_pylist()


def shaped(name, ts, dur, dims, strides, concrete):
    return x("cpu_op", name, ts, dur, **{"Input Dims": dims, "Input type": ["float"] * len(dims),
                                         "Input Strides": strides, "Concrete Inputs": concrete})


def launch(ts, corr):
    return x("cuda_runtime", "cudaLaunchKernel", ts, 1, correlation=corr)


# CPU thread 100 (µs):
#   aten::add 100 |------------| 120        aten::mul 130 |-----------| 150
#     launch c1 101 |-| 102  c2 105 |-| 106   launch c3 131 |-| 132  c4 135 |-| 136    launch c5 160 |-| 161
# GPU stream 7:
#   add_k c1 200 |-| 202  add_k c2 203 |--| 207  mul_k c3 210 |------| 222  mul_k c4 230 |-| 233
#   bare_k c5 240 |-| 241.5                     orphan_k (no launch in the trace) 300 |-| 301
# Kernels under 10 µs: 2, 4, 3, 1.5, 1 µs (mul_k c3 lasts 12). GPU span: the launched activities', 200 to 241.5.
ADD = ("aten::add", [[4], [4], []], [[1], [1], []], ["", "", "1"])
MUL = ("aten::mul", [[4], []], [[1], []], ["", "2"])
DRAWN = [
    shaped(*ADD[:1], 100, 20, *ADD[1:]), launch(101, 1), launch(105, 2),
    shaped(*MUL[:1], 130, 20, *MUL[1:]), launch(131, 3), launch(135, 4),
    launch(160, 5),
    gpu("kernel", "add_k", 200, 2, 1), gpu("kernel", "add_k", 203, 4, 2), gpu("kernel", "mul_k", 210, 12, 3),
    gpu("kernel", "mul_k", 230, 3, 4), gpu("kernel", "bare_k", 240, 1.5, 5), gpu("kernel", "orphan_k", 300, 1, 99),
]
SPAN = 41_500


@pytest.fixture
def drawn(tmp_path):
    return write_trace(tmp_path / "drawn.json", DRAWN)


def test_histogram_golden(drawn):
    # 2 bins over 1 to 4 µs: [1, 2.5) holds 1, 1.5 and 2; [2.5, 4] holds 3 and 4 (the last bin holds its end)
    got = rows(drawn, f"{HISTOGRAM}:bins=2")
    assert [(r["Bin Start (ns)"], r["Bin End (ns)"], r["Count"], r["Time (ns)"]) for r in got] == [
        (1000, 2500, 3, 4500), (2500, 4000, 2, 7000)]
    assert [r["Time (%)"] for r in got] == pytest.approx([4500 * 100 / SPAN, 7000 * 100 / SPAN], abs=0.05)
    assert got[-1]["Cumulative Time (%)"] == pytest.approx(11500 * 100 / SPAN, abs=0.05)


def test_summary_golden(drawn):
    got = [(r["Parent Operator"], r["Input Dims"], r["Input Strides"], r["Concrete Inputs"], r["Kernel Name"],
            r["Time (ns)"], r["Count"]) for r in api_rows(drawn, SUMMARY)]
    text = [str(v) for v in ADD[1:]], [str(v) for v in MUL[1:]]
    assert got == [("aten::add", *text[0], "add_k", 6000, 2), ("aten::mul", *text[1], "mul_k", 3000, 1),
                   ("-", "-", "-", "-", "bare_k", 1500, 1), ("-", "-", "-", "-", "orphan_k", 1000, 1)]
    first = api_rows(drawn, SUMMARY)[0]
    assert first["Avg (ns)"] == 3000 and first["Time (%)"] == pytest.approx(6000 * 100 / SPAN)


def test_threshold_is_strict_and_order_by_count(drawn):
    # threshold 3 µs: the 3 µs mul_k is not short; threshold 2: neither is the 2 µs add_k
    assert [(r["Kernel Name"], r["Count"]) for r in api_rows(drawn, SUMMARY, threshold=3)] == [
        ("add_k", 1), ("bare_k", 1), ("orphan_k", 1)]
    assert [r["Kernel Name"] for r in api_rows(drawn, SUMMARY, threshold=2)] == ["bare_k", "orphan_k"]
    assert [r["Kernel Name"] for r in api_rows(drawn, SUMMARY, order_by="count")] == [
        "add_k", "mul_k", "bare_k", "orphan_k"]
    assert [r["Kernel Name"] for r in api_rows(drawn, SUMMARY, rows=1)] == ["add_k"]
    assert sum(r["Count"] for r in api_rows(drawn, HISTOGRAM, threshold=100)) == 6


def test_no_short_kernel_gives_empty_tables(drawn):
    assert rows(drawn, f"{HISTOGRAM}:threshold=0.5") == []
    assert rows(drawn, f"{SUMMARY}:threshold=0.5") == []


@pytest.mark.parametrize("rule", [f"{HISTOGRAM}:bins=0", f"{SUMMARY}:threshold=-1", f"{SUMMARY}:order-by=name"])
def test_bad_option_is_one_line_exit_2(drawn, rule):
    run = run_cli("analyze", "-r", rule, drawn)
    assert run.code == 2 and len(run.err.strip().splitlines()) == 1 and "Traceback" not in run.err


def test_asysrep_parent_is_the_innermost_range(writer):
    pid = 100
    tid = (pid << 24) | 101
    outer, inner, call, kern = writer.strings(["outer", "inner", "hggcLaunchKernel", "k"])
    # thread 101: outer [0, 1000) holds inner [100, 300); launches c1 @150 (inner), c2 @400 (outer), c3 @2000 (none)
    writer.add("hgtx", start=[0, 100], end=[1000, 300], eventType=59, globalTid=tid, domainId=0,
               textId=[outer, inner])
    writer.add("runtime", start=[150, 400, 2000], end=[160, 410, 2010], globalTid=tid, correlationId=[1, 2, 3],
               nameId=call)
    writer.add("kernels", start=[500, 600, 3000], end=[600, 9600, 3200], deviceId=0, correlationId=[1, 2, 3],
               globalPid=pid << 24, demangledName=kern)
    writer.close()
    got = [(r["Parent Operator"], r["Input Dims"], r["Time (ns)"]) for r in api_rows(writer.path, SUMMARY)]
    assert got == [("outer", "-", 9000), ("-", "-", 200), ("inner", "-", 100)]
    assert api_rows(writer.path, SUMMARY)[0]["Time (%)"] == pytest.approx(9000 * 100 / 9100)  # span: 500 to 9600


KERNELS = st.lists(st.tuples(st.integers(0, 30), st.integers(1, 15_000), st.integers(-1, 3)), min_size=1,
                   max_size=30)


@settings(max_examples=40, deadline=None)
@given(KERNELS, st.integers(1, 12), st.integers(1, 12))
@example(kernels=[(0, 1, 0), (0, 8165, 0)], bins=1, threshold_us=9)  # the longest kernel on a float edge
def test_match_brute_force(kernels, bins, threshold_us):
    """Each kernel: (start slot, duration ns, parent: -1 none, 0..2 a range, 3 no launch call)."""
    pid, tid = 100, (100 << 24) | 101
    with tempfile.TemporaryDirectory() as tmp:
        w = ReportWriter(Path(tmp) / "r.asysrep")
        names = w.strings(["r0", "r1", "r2", "call", "ka", "kb"])
        w.add("hgtx", start=[0, 1000, 2000], end=[500, 1500, 2500], eventType=59, globalTid=tid, domainId=0,
              textId=names[:3])
        launched = [i for i, k in enumerate(kernels) if k[2] != 3]
        if launched:
            w.add("runtime", start=[kernels[i][2] * 1000 + 100 if kernels[i][2] >= 0 else 5000 for i in launched],
                  end=[kernels[i][2] * 1000 + 110 if kernels[i][2] >= 0 else 5010 for i in launched],
                  globalTid=tid, correlationId=[i + 1 for i in launched], nameId=names[3])
        starts = [10_000 + s * 20_000 for s, _, _ in kernels]
        w.add("kernels", start=starts, end=[s + d for s, (_, d, _) in zip(starts, kernels)], deviceId=0,
              correlationId=[i + 1 for i in range(len(kernels))], globalPid=pid << 24,
              demangledName=[names[4 + i % 2] for i in range(len(kernels))])
        w.close()
        hist = api_rows(w.path, HISTOGRAM, bins=bins, threshold=threshold_us)
        summary = api_rows(w.path, SUMMARY, threshold=threshold_us)
    short = [(i, d) for i, (_, d, _) in enumerate(kernels) if d < threshold_us * 1000]
    linked = [i for i in range(len(kernels)) if kernels[i][2] != 3] or list(range(len(kernels)))
    span = max(starts[i] + kernels[i][1] for i in linked) - min(starts[i] for i in linked)
    if not short:
        assert hist == [] and summary == []
        return
    micros = np.array([d for _, d in short]) / 1000.0
    counts, edges = np.histogram(micros, bins=bins)  # TraceLens's call
    assert [r["Count"] for r in hist] == counts.tolist()
    assert [r["Bin Start (ns)"] for r in hist] == pytest.approx((edges[:-1] * 1000).tolist())
    # numpy's own binning, weighted by the durations (edges compared in ns could disagree with the µs edges:
    # 8.165 µs * 1000 is 8164.999999999999 ns, and the longest kernel, on the last edge, is in the last bin)
    times, _ = np.histogram(micros, bins=bins, weights=[d for _, d in short])
    assert [r["Time (ns)"] for r in hist] == times.astype(np.int64).tolist()
    assert hist[-1]["Cumulative Time (%)"] == pytest.approx(sum(d for _, d in short) * 100 / span)
    expected: dict[tuple[str, str], list[int]] = {}
    for i, d in short:
        parent = f"r{kernels[i][2]}" if kernels[i][2] in (0, 1, 2) else "-"
        expected.setdefault((parent, ["ka", "kb"][i % 2]), []).append(d)
    got = {(r["Parent Operator"], r["Kernel Name"]): (r["Time (ns)"], r["Count"]) for r in summary}
    assert got == {k: (sum(v), len(v)) for k, v in expected.items()}
    times = [r["Time (ns)"] for r in summary]
    assert times == sorted(times, reverse=True)


@pytest.mark.parametrize("path", corpus_params() + [pytest.param(p, id=p.stem) for p in TRACES])
def test_corpus_runs(path):
    """Every short kernel is in one bin and one summary row; a report without kernels is a
    one-line error."""
    run = run_cli("analyze", "-r", HISTOGRAM, path)
    assert "Traceback" not in run.err
    if run.code == 2:
        assert "does not contain" in run.err and len(run.err.strip().splitlines()) == 1
        return
    assert sum(r["Count"] for r in rows(path, HISTOGRAM)) == sum(r["Count"] for r in rows(path, SUMMARY))


# -- TraceLens's short-kernel sheets ------------------------------------------------------------------

def as_lists(text: str) -> str:
    """TraceLens's tuple text of a recorded field as the trace's list text: ``((512,), ())`` -> ``[[512], []]``."""
    def lists(value):
        return [lists(v) for v in value] if isinstance(value, (tuple, list)) else value
    return str(lists(ast.literal_eval(text)))


@pytest.fixture(params=GOLDENS or [None], ids=lambda p: p.parent.name.removesuffix(".golden") if p else "absent")
def golden(request):
    if request.param is None:
        pytest.skip("../shared/corpus/kineto is absent")
    folder = request.param.parent
    return KINETO / f"{folder.name.removesuffix('.golden')}.json.gz", folder


def test_histogram_matches_tracelens(golden):
    trace, folder = golden
    expected = list(csvlib.DictReader((folder / "short_kernel_histogram.csv").open()))
    got = api_rows(trace, HISTOGRAM)
    assert [r["Count"] for r in got] == [int(e["count"]) for e in expected]
    for ours, theirs in zip(got, expected):
        assert ours["Bin Start (ns)"] == pytest.approx(float(theirs["bin_start"]) * 1000, abs=1e-6)
        assert ours["Bin End (ns)"] == pytest.approx(float(theirs["bin_end"]) * 1000, abs=1e-6)


def test_summary_matches_tracelens(golden):
    """Every golden row equals ours to the nanosecond, in the same order, except:

    * kernels with no operator around their launch (launched before the trace's first
      cpu_op) are our '-' rows; TraceLens's groupby drops their empty keys (pandas dropna);
    * rows tied on time and count come in TraceLens's first-appearance order, in ours by
      their texts;
    * the share's denominator, TraceLens's GPU span, is a difference of float µs timestamps
      (about 1e12, a quarter-ns step): it equals our integer span within 1 ns."""
    trace, folder = golden
    text = (folder / "short_kernels_summary.csv").read_text()
    expected = list(csvlib.DictReader(text.splitlines())) if text.strip() else []
    got = api_rows(trace, SUMMARY)
    gpu_only = bool(expected) and "Parent cpu_op" not in expected[0]
    if not gpu_only:
        got = [r for r in got if r["Parent Operator"] != "-"]
    assert len(got) == len(expected)

    def key(theirs):
        if gpu_only:
            return ("-", "-", "-", "-", theirs["Kernel name"])
        return (theirs["Parent cpu_op"], as_lists(theirs["Input dims"]), as_lists(theirs["Input strides"]),
                as_lists(theirs["Concrete Inputs"]), theirs["Kernel name"])

    ours_by_key = {(r["Parent Operator"], r["Input Dims"], r["Input Strides"], r["Concrete Inputs"],
                    r["Kernel Name"]): r for r in got}
    for position, theirs in enumerate(expected):
        ours = ours_by_key[key(theirs)]
        time = round(float(theirs["Short Kernel duration (µs) sum"]) * 1000)
        assert (ours["Time (ns)"], ours["Count"]) == (time, int(theirs["Short Kernel count"]))
        assert ours["Avg (ns)"] == pytest.approx(float(theirs["Short Kernel duration (µs) mean"]) * 1000, abs=1e-6)
        their_span = time * 100 / float(theirs["Short Kernel duration (µs) percent of total time"])
        assert abs(their_span - ours["Time (ns)"] * 100 / ours["Time (%)"]) < 1
        tie = (got[position]["Time (ns)"], got[position]["Count"]) == (ours["Time (ns)"], ours["Count"])
        assert tie, f"row {position}: {theirs}"
