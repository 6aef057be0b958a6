"""asys analyze: ppu_idle_breakdown, ppu_queue_length and ppu_queue_length_trace (D38): golden
timelines on the three inputs, brute force, the corpus, and HTA's numbers."""

from __future__ import annotations

from fractions import Fraction

import gzip
import json
import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
from conftest import corpus_params, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from test_hggc_api import csv
from test_kineto import KINETO_CORPUS, TRACES, gpu, write_trace, x

from asysstats.reading.schema import NSYS
from asysstats.synth.writer import ReportWriter

US = 1000
PID = 100 << 24
MAIN = PID | 100
IDLE_HEADER = "Row#,PID,Device ID,Stream ID,Idle Class,Idle Time (ns),Gaps,Share (%),"
QUEUE_HEADER = ("Row#,PID,Device ID,Stream ID,Launches,Mean,Max,P50,P90,P99,Time at Zero (ns),Time at Zero (%),"
                "Time at Max (ns),Span (ns),")
TRACE_HEADER = "Row#,Start (ns),Queue Length,PID,Device ID,Stream ID,"

# The timeline (µs), one process, device 0; launch calls on thread 100:
#   calls:      c1 [0,5) c2 [10,15)          c3 [60,65) c4 [66,70)                        (stream 8: c5 1, c6 3, c7 5)
#   stream 7:        k1 [20,40) k2 [50,55)      k3 [100,120)          k4 [200,210) memcpy [215,216) (no call)
#     gap 40-50: c2 began before 40, 10 < 30 -> kernel wait   gap 55-100: c3 began after 55 -> host wait
#     gap 120-200: c4 began before 120, 80 >= 30 -> other     gap 210-215: no call, 5 < 30 -> kernel wait
#   stream 8:   k5 [1,50)  k6 [3,20) (inside k5)  k7 [60,70)
#     gap 50-60 (after k5's end, not k6's: HTA would see 40 of other) -> kernel wait
KERNELS = [  # (stream, start, end, correlation, call start)
    (7, 20, 40, 1, 0), (7, 50, 55, 2, 10), (7, 100, 120, 3, 60), (7, 200, 210, 4, 66),
    (8, 1, 50, 5, 1), (8, 3, 20, 6, 3), (8, 60, 70, 7, 5)]
MEMCPY = (7, 215, 216)


def build(path: Path, dialect: str | None = None) -> Path:
    w = ReportWriter(path, dialect=dialect) if dialect else ReportWriter(path)
    name, launch = w.strings(["k"]), w.strings(["cudaLaunchKernel"])
    w.add("kernels", start=[k[1] * US for k in KERNELS], end=[k[2] * US for k in KERNELS], deviceId=0,
          streamId=[k[0] for k in KERNELS], correlationId=[k[3] for k in KERNELS], globalPid=PID,
          demangledName=name[0], shortName=name[0], mangledName=name[0])
    w.add("memcpy", start=[MEMCPY[1] * US], end=[MEMCPY[2] * US], deviceId=0, streamId=MEMCPY[0], correlationId=0,
          globalPid=PID, bytes=8, copyKind=1)
    w.add("runtime", start=[k[4] * US for k in KERNELS], end=[k[4] * US + 4 * US for k in KERNELS], globalTid=MAIN,
          correlationId=[k[3] for k in KERNELS], nameId=launch[0])
    w.close()
    return w.path


def build_kineto(path: Path) -> Path:
    events = [x("cuda_runtime", "cudaLaunchKernel", k[4], 4, correlation=k[3]) for k in KERNELS]
    events += [gpu("kernel", "k", k[1], k[2] - k[1], k[3], stream=k[0]) for k in KERNELS]
    events.append(gpu("gpu_memcpy", "Memcpy HtoD", MEMCPY[1], MEMCPY[2] - MEMCPY[1], 0, stream=MEMCPY[0]))
    return write_trace(path, events)


@pytest.fixture(params=["asysrep", "nsys", "kineto"])
def report(request, tmp_path):
    if request.param == "kineto":
        return build_kineto(tmp_path / "trace.json")
    if request.param == "nsys":
        return build(tmp_path / "report.sqlite", NSYS)
    return build(tmp_path / "report.asysrep")


def keyless(lines: list[str]) -> list[str]:
    """The rows without Row# and the PID column (a Kineto trace numbers its processes its own way)."""
    return [",".join(c for i, c in enumerate(line.split(",")) if i not in (0, 1)) for line in lines[1:]]


def test_idle_breakdown_golden(report):
    lines = csv(report, "ppu_idle_breakdown", "analyze")
    assert lines[0] == IDLE_HEADER
    assert keyless(lines) == [
        '0,7,"host wait",45000,1,32.1,', '0,7,"kernel wait",15000,2,10.7,', '0,7,"other",80000,1,57.1,',
        '0,8,"host wait",0,0,0.0,', '0,8,"kernel wait",10000,1,100.0,', '0,8,"other",0,0,0.0,']


def test_idle_breakdown_threshold_and_filter_time(report):
    # kernel-wait 5 µs: the 10 µs gaps become other, the 5 µs one too (strictly shorter)
    assert keyless(csv(report, "ppu_idle_breakdown:kernel-wait=5", "analyze"))[:3] == [
        '0,7,"host wait",45000,1,32.1,', '0,7,"kernel wait",0,0,0.0,', '0,7,"other",95000,3,67.9,']
    # --filter-time 45 µs..250 µs: k2 k3 k4 and the memcpy (stream 7), k7 (stream 8: alone, no gap)
    assert keyless(csv(report, "ppu_idle_breakdown", "analyze", "--filter-time", "45000/250000")) == [
        '0,7,"host wait",45000,1,34.6,', '0,7,"kernel wait",5000,1,3.8,', '0,7,"other",80000,1,61.5,',
        '0,8,"host wait",0,0,0.0,', '0,8,"kernel wait",0,0,0.0,', '0,8,"other",0,0,0.0,']


def test_queue_length_golden(report):
    # stream 7 (until end): 1 [0,10) 2 [10,40) 1 [40,55) 0 [55,60) 1 [60,66) 2 [66,120) 1 [120,210): mean 289/210
    # stream 8: 1 [1,3) 2 [3,5) 3 [5,20) 2 [20,50) 1 [50,70): mean 131/69
    lines = csv(report, "ppu_queue_length", "analyze")
    assert lines[0] == QUEUE_HEADER
    assert keyless(lines) == ["0,7,4,1.4,2,1,2,2,5000,2.4,84000,210000,", "0,8,3,1.9,3,2,3,3,0,0.0,15000,69000,"]


def test_queue_length_trace_grows_and_drains(report):
    lines = csv(report, "ppu_queue_length_trace:until=start", "analyze")
    assert lines[0] == TRACE_HEADER
    # until start: k1 [0,20) k2 [10,50) k3 [60,100) k4 [66,200) on stream 7
    assert [",".join(c for i, c in enumerate(line.split(",")) if i in (1, 2, 5)) for line in lines[1:]] == [
        "0,1,7", "10000,2,7", "20000,1,7", "50000,0,7", "60000,1,7", "66000,2,7", "100000,1,7", "200000,0,7",
        "5000,1,8", "60000,0,8"]  # k5, k6 start as their calls do: outstanding for no time


def test_bad_option_is_one_line(report):
    run = run_cli("analyze", "-r", "ppu_queue_length:until=middle", report)
    assert run.code == 2 and "until" in run.err and len(run.err.strip().splitlines()) == 1


# Brute force -------------------------------------------------------------------------------------------------

ACTIVITY = st.tuples(st.integers(0, 1), st.integers(0, 60), st.integers(1, 12), st.none() | st.integers(0, 80))


def brute_idle(acts, threshold: int) -> dict[tuple[int, str], int]:
    """Per stream: every uncovered nanosecond between its first start and last end, classed by the
    run of idle nanoseconds it lies in and the activity starting where the run ends."""
    out: dict[tuple[int, str], int] = {}
    for stream in {a[0] for a in acts}:
        mine = [a for a in acts if a[0] == stream]
        lo, hi = min(a[1] for a in mine), max(a[1] + a[2] for a in mine)
        covered = [any(a[1] <= t < a[1] + a[2] for a in mine) for t in range(lo, hi)]
        t = 0
        while t < len(covered):
            if covered[t]:
                t += 1
                continue
            run_end = t
            while not covered[run_end]:
                run_end += 1
            a, b = lo + t, lo + run_end
            ender = next(m for m in mine if m[1] == b)
            kind = ("host wait" if ender[3] is not None and ender[3] > a else
                    "kernel wait" if b - a < threshold else "other")
            out[stream, kind] = out.get((stream, kind), 0) + b - a
            t = run_end
    return out


def brute_queue(acts, until: str) -> dict[int, tuple]:
    """Per stream: the outstanding launches at every nanosecond of its span; mean, max, P50, time at zero and max."""
    out = {}
    for stream in {a[0] for a in acts}:
        spans = []
        for s, start, dur, call in (a for a in acts if a[0] == stream):
            done = start + dur if until == "end" else start
            if call is not None and min(call, done) < done:
                spans.append((min(call, done), done))
        if not spans:
            continue
        lo, hi = min(s for s, _ in spans), max(e for _, e in spans)
        counts = [sum(s <= t < e for s, e in spans) for t in range(lo, hi)]
        p50 = next(v for v in range(max(counts) + 1) if sum(c <= v for c in counts) >= 0.5 * len(counts))
        mean = Fraction(sum(counts), len(counts))  # printed with one decimal, half away from zero (D2)
        out[stream] = (float(int(mean * 10 + Fraction(1, 2)) / 10), max(counts), p50, counts.count(0),
                       counts.count(max(counts)), hi - lo)
    return out


@settings(max_examples=40, deadline=None)
@given(st.lists(ACTIVITY, min_size=1, max_size=10, unique_by=lambda a: (a[0], a[1])), st.integers(1, 10),
       st.sampled_from(["end", "start"]))
def test_rules_match_brute_force(acts, threshold, until):
    with tempfile.TemporaryDirectory() as tmp:
        w = ReportWriter(Path(tmp) / "r.asysrep")
        name, launch = w.strings(["k"]), w.strings(["launch"])
        corr = list(range(1, len(acts) + 1))
        w.add("kernels", start=[a[1] for a in acts], end=[a[1] + a[2] for a in acts], deviceId=0,
              streamId=[a[0] for a in acts], correlationId=corr, globalPid=PID, demangledName=name[0])
        linked = [(c, a[3]) for c, a in zip(corr, acts) if a[3] is not None]
        if linked:
            w.add("runtime", start=[t for _, t in linked], end=[t + 1 for _, t in linked], globalTid=MAIN,
                  correlationId=[c for c, _ in linked], nameId=launch[0])
        w.close()
        idle = csv(w.path, f"ppu_idle_breakdown:kernel-wait={threshold / 1000}", "analyze")[1:]
        got = {(int(r[3]), r[4].strip('"')): int(r[5]) for r in (line.split(",") for line in idle) if int(r[5])}
        assert got == brute_idle(acts, threshold)
        queue = csv(w.path, f"ppu_queue_length:until={until}", "analyze")[1:]
        got_q = {int(r[3]): (float(r[5]), int(r[6]), int(r[7]), int(r[10]), int(r[12]), int(r[13]))
                 for r in (line.split(",") for line in queue)}
        assert got_q == brute_queue(acts, until)


# The corpus and HTA's numbers ----------------------------------------------------------------------------------

RULES = ("ppu_idle_breakdown", "ppu_queue_length", "ppu_queue_length_trace:rows=5")


def kineto_params(names=None):
    paths = [p for p in TRACES if names is None or p.name.split(".")[0] in names]
    if not paths:
        return [pytest.param(None, marks=pytest.mark.skip(reason="../shared/corpus/kineto is absent"))]
    return [pytest.param(p, id=p.name.split(".")[0]) for p in paths]


@pytest.mark.parametrize("path", corpus_params() + kineto_params())
def test_corpus_runs(path):
    """Every rule on every corpus file: a table, or the one-line error of a report without PPU activities."""
    for rule in RULES:
        run = run_cli("analyze", "-r", rule, "--format", "csv", path)
        assert "Traceback" not in run.err
        if run.code == 2:
            assert "does not contain" in run.err and len(run.err.strip().splitlines()) == 1, (rule, run.err)
        else:
            assert run.code == 0 and run.out.startswith("Row#,"), (rule, run.err)


def rounded_like_hta(source: Path, target: Path) -> Path:
    """The trace with HTA's preprocessing of float times: start ceil(ts), end floor(ts + dur)."""
    trace = json.load(gzip.open(source))
    for e in trace["traceEvents"]:
        if e.get("ph") == "X" and isinstance(e.get("ts"), (int, float)) and isinstance(e.get("dur"), (int, float)):
            start = math.ceil(e["ts"])
            e["ts"], e["dur"] = start, max(math.floor(e["ts"] + e["dur"]) - start, 0)
    return write_trace(target, trace["traceEvents"])


def hta_golden(name: str) -> dict:
    return json.loads((KINETO_CORPUS / f"{name}.golden" / "hta_test_asserts.json").read_text())["asserts"]


@pytest.mark.parametrize("path", kineto_params({"hta_mtia_rank0"}))
def test_hta_mtia_idle_breakdown_and_queue_length(path, tmp_path):
    """MTIA device work (cat mtia_ccp_events) is read as kernels. On the trace rounded as HTA rounds,
    stream 1's host wait is HTA's 417937 µs; on the raw trace it is 404264 µs (HTA's rounding moves
    a launch call that began within 1 µs before a kernel's end to after it: 44 more host waits).
    Stream 801 is ours only: its events carry no args.stream (HTA: stream -1, left out), we take the tid."""
    asserts = hta_golden("hta_mtia_rank0")
    raw = csv(path, "ppu_idle_breakdown", "analyze")
    assert raw[1].split(",")[3:6] == ["1", '"host wait"', "404263960"]
    assert {line.split(",")[3] for line in raw[1:]} == {"1", "102", "801"}
    rounded = rounded_like_hta(path, tmp_path / "mtia_rounded.json")
    idle = csv(rounded, "ppu_idle_breakdown", "analyze")
    host = asserts["get_idle_time_breakdown(ranks=[0])"]["stream_1_first_row"]["idle_time"]
    assert idle[1].split(",")[3:6] == ["1", '"host wait"', str(int(host) * US)]
    # the queue length: HTA's counts until the kernel starts, and its statistics are over the series' points
    series = csv(rounded, "ppu_queue_length_trace:until=start", "analyze")[1:]
    points = np.array([int(r[2]) for r in (line.split(",") for line in series) if r[5] == "102"])
    stats = asserts["get_queue_length_summary(ranks=[0])"]["stream_102_queue_length"]
    assert (len(points), points.mean(), points.max(), np.percentile(points, 50)) == (
        stats["count"], stats["mean"], stats["max"], stats["50%"])
    assert round(points.std(ddof=1), 6) == stats["std"]
    # HTA's time blocked on a full queue (max_queue_length=1) is our time at the max, 1 here
    summary = {r[3]: r for r in (line.split(",") for line in csv(rounded, "ppu_queue_length:until=start",
                                                                  "analyze")[1:])}
    blocked = asserts["get_time_spent_blocked_on_full_queue(max_queue_length=1)"]["duration_at_max_queue_length"]
    assert summary["102"][6] == "1" and int(summary["102"][12]) == blocked * US


@pytest.mark.parametrize("path", kineto_params({"hta_negq_a100_r0"}))
def test_hta_negq_queue_length_rows_and_no_negative_value(path):
    """HTA's summary has one row per GPU stream (6) and its series no negative value: ours too,
    over every event (HTA drops the last ProfilerStep first; the streams are the same)."""
    asserts = hta_golden("hta_negq_a100_r0")
    summary = csv(path, "ppu_queue_length:until=start", "analyze")
    assert len(summary) - 1 == asserts["get_queue_length_summary(ranks=[0])"]["rows"]
    for until in ("start", "end"):
        series = csv(path, f"ppu_queue_length_trace:until={until}", "analyze")[1:]
        assert len(series) > 12000 and min(int(line.split(",")[2]) for line in series) >= 0


@pytest.mark.parametrize("path", kineto_params({"hta_mtia_rank0"}))
def test_hta_mtia_temporal_breakdown(path, tmp_path):
    """HTA's temporal breakdown (idle / compute / non-compute over the device's span, compared as
    percentages with a delta of 0.01) is hggc_ppu_time_breakdown's, on the trace preprocessed as HTA
    does: times rounded (rounded_like_hta) and device events without args.stream left out (HTA's
    stream -1; ours would be stream 801, by the tid). Idle is HTA's; HTA's non-compute time is its
    MEMORY kernels, found by name (MTIA's DMA kernels), which our categories count as computation:
    our computation is HTA's compute plus non-compute."""
    asserts = hta_golden("hta_mtia_rank0")["get_temporal_breakdown()"]
    trace = json.loads(rounded_like_hta(path, tmp_path / "rounded.json").read_text())
    kept = [e for e in trace["traceEvents"]
            if e.get("cat") != "mtia_ccp_events" or (e.get("args") or {}).get("stream") is not None]
    rows = {r[2].strip('"'): int(r[3]) for r in (line.split(",") for line in csv(
        write_trace(tmp_path / "hta.json", kept), "hggc_ppu_time_breakdown", "stats")[1:9])}
    span = asserts["kernel_time(us)"]
    assert abs(100 * rows["Idle"] / rows["Total"] - 100 * asserts["idle_time(us)"] / span) <= 0.01
    both = asserts["compute_time(us)"] + asserts["non_compute_time(us)"]
    assert abs(100 * rows["Computation"] / rows["Total"] - 100 * both / span) <= 0.01
    assert rows["Memcpy"] == 0 and asserts["non_compute_time(us)"] > 0  # the difference named above
