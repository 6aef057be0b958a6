"""hggc_ppu_timeline_sum: golden output, JSON typing, brute-force properties, the corpus."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.compute.intervals import start_order_gaps
from asysstats.synth.writer import ReportWriter

from conftest import corpus_params, fingerprint, run_cli

RULE = "hggc_ppu_timeline_sum"
HEADER = ("Row#,Device,Span (ns),Operations,Kernels,Kernel Time (ns),Kernel Busy (%),Gap Count,"
          "Gap Total (ns),Gap Avg (ns),Gap Max (ns),Launch API Union (ns),Launch API Overlap (ns),"
          "Launch API Overlap (%),")
PID = 7


def build(writer):
    """Device 0: five kernels (N nested in A, B overlapping A), one memcpy; device 1: two
    touching kernels and a memset; device 2: one memcpy and no kernel.

        time     0    50  100  150  200  250  300  350  400  450  500 ... 1000 1100 1200 1300 2000 2100
        dev0 cpy      [-)
        dev0 A             [-------)                                     A [100,200) N [110,130)
        dev0 N              [)                                           B [150,300) C [400,450)
        dev0 B                  [-----------)              [-)  [-)      D [460,500)
        API (launch)     [60.......160)        [300,330)                 cudaMemcpy [40,90) is no launch
        dev1 E/F                                              [1000,1100)[1100,1200)  memset [1300,1310)
        API (launch)                                       [950 ......1060)
        dev2 cpy                                                                           [2000,2100)
    """
    name = writer.strings(["_Z1kPf", "cudaLaunchKernel", "cudaMemcpy"])
    writer.add("kernels", start=[100, 110, 150, 400, 460, 1000, 1100], end=[200, 130, 300, 450, 500, 1100, 1200],
               deviceId=[0, 0, 0, 0, 0, 1, 1], correlationId=[1, 2, 3, 4, 5, 6, 7], globalPid=PID << 24,
               demangledName=name[0], shortName=name[0], mangledName=name[0])
    writer.add("memcpy", start=[50, 2000], end=[80, 2100], deviceId=[0, 2], correlationId=9, bytes=8, copyKind=1)
    writer.add("memset", start=[1300], end=[1310], deviceId=[1], correlationId=10, bytes=8)
    writer.add("runtime", start=[40, 60, 105, 115, 300, 320, 950, 1050], end=[90, 110, 115, 160, 320, 330, 1050, 1060],
               correlationId=[9, 1, 2, 3, 4, 5, 6, 7], globalTid=(PID << 24) + 1,
               nameId=[name[2]] + [name[1]] * 7)
    writer.close()
    return writer.path


def test_golden_csv(writer):
    run = run_cli("stats", "-r", RULE, "--format", "csv", build(writer))
    assert run.code == 0, run.err
    assert run.out.splitlines() == [
        HEADER,
        # gaps in start order: 110-200<0, 150-130=20 (N, not A, precedes B), 400-300, 460-450, 1000-500, 1100-1100
        '1,"All",2050,10,7,560,27.3,4,630,157,500,240,120,50.0,',
        '2,"0",450,6,5,360,80.0,3,130,43,100,130,60,46.2,',
        '3,"1",310,3,2,200,64.5,0,0,"-","-",110,60,54.5,',
        '4,"2",100,1,0,0,0.0,0,0,"-","-",0,0,"-",',
    ]


def test_device_option_restricts_the_all_row(writer):
    run = run_cli("stats", "-r", f"{RULE}:device=1/2", "--format", "csv", build(writer))
    assert run.code == 0, run.err
    assert run.out.splitlines()[1:] == [
        '1,"All",1100,4,2,200,18.2,0,0,"-","-",110,60,54.5,',  # the memcpy is no kernel gap
        '2,"1",310,3,2,200,64.5,0,0,"-","-",110,60,54.5,',
        '3,"2",100,1,0,0,0.0,0,0,"-","-",0,0,"-",',
    ]


def test_json_is_typed(writer):
    run = run_cli("stats", "-r", RULE, "--format", "json", build(writer))
    assert run.code == 0, run.err
    rows = json.loads(run.out)
    assert rows[0] == {
        "Device": "All", "Span (ns)": 2050, "Operations": 10, "Kernels": 7, "Kernel Time (ns)": 560,
        "Kernel Busy (%)": 27.3, "Gap Count": 4, "Gap Total (ns)": 630, "Gap Avg (ns)": 157, "Gap Max (ns)": 500,
        "Launch API Union (ns)": 240, "Launch API Overlap (ns)": 120, "Launch API Overlap (%)": 50.0,
    }
    last = rows[3]
    assert (last["Device"], last["Gap Avg (ns)"], last["Gap Max (ns)"], last["Launch API Overlap (%)"]) == \
        ("2", None, None, None)
    assert isinstance(last["Kernel Busy (%)"], float) and isinstance(last["Span (ns)"], int)


def test_correlation_ids_are_per_process(writer):
    name = writer.strings(["k", "cudaLaunchKernel"])
    writer.add("kernels", start=[100], end=[200], deviceId=0, correlationId=1, globalPid=1 << 24,
               demangledName=name[0], shortName=name[0], mangledName=name[0])
    # the same correlation id in another process is not this kernel's launch
    writer.add("runtime", start=[50, 0], end=[150, 10], correlationId=1, globalTid=[(1 << 24) + 1, (2 << 24) + 1],
               nameId=name[1])
    writer.close()
    run = run_cli("stats", "-r", f"{RULE}:column=Launch API Union (ns)/Launch API Overlap (ns)", "--format", "csv",
                  writer.path)
    assert run.out.splitlines()[1:] == ["1,100,50,", "2,100,50,"]


def test_of_two_calls_with_one_correlation_id_the_first_to_start_launched(writer):
    """A repeated (process, correlation id) among the calls: the earlier start is the launch.

        time     0    50  100  150  200  250
        kernel             [-------)          [100,200)
        call 1        [.......)               [60,140)   same correlation id, rows in no time order
        call 2   [...)                        [0,30)     <- starts first: the launch
    """
    name = writer.strings(["k", "cudaLaunchKernel"])
    writer.add("kernels", start=[100], end=[200], deviceId=0, correlationId=1, globalPid=1 << 24,
               demangledName=name[0], shortName=name[0], mangledName=name[0])
    writer.add("runtime", start=[60, 0], end=[140, 30], correlationId=1, globalTid=(1 << 24) + 1, nameId=name[1])
    writer.close()
    run = run_cli("stats", "-r", f"{RULE}:column=Launch API Union (ns)/Launch API Overlap (ns)", "--format", "csv",
                  writer.path)
    assert run.out.splitlines()[1:] == ["1,30,0,", "2,30,0,"]


def test_no_kernels_anywhere(writer):
    writer.add("memcpy", start=[10], end=[30], deviceId=3, bytes=8, copyKind=1)
    writer.create("kernels")
    writer.close()
    run = run_cli("stats", "-r", RULE, "--format", "csv", writer.path)
    assert run.out.splitlines()[1:] == ['1,"All",20,1,0,0,0.0,0,0,"-","-",0,0,"-",',
                                        '2,"3",20,1,0,0,0.0,0,0,"-","-",0,0,"-",']


def test_missing_activity_tables_name_the_collection_option(writer):
    name = writer.strings(["cudaFree"])
    writer.add("runtime", start=[1], end=[2], globalTid=1, nameId=name[0])
    writer.close()
    run = run_cli("stats", "-r", RULE, writer.path)
    assert run.code == 2 and "does not contain HGGC kernel data (collect with --trace hggc)" in run.err


# -- properties ---------------------------------------------------------------------------

spans = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 20)), max_size=12)


@settings(max_examples=60, deadline=None)
@given(spans)
def test_start_order_gaps_match_brute_force(pairs):
    starts = np.array([p[0] for p in pairs], dtype=np.int64)
    ends = starts + np.array([p[1] for p in pairs], dtype=np.int64)
    ordered = sorted(zip(starts.tolist(), ends.tolist()))
    expected = [max(0, ordered[i][0] - ordered[i - 1][1]) for i in range(1, len(ordered))]
    assert start_order_gaps(starts, ends).tolist() == expected


def covered(intervals) -> set[int]:
    return {t for s, e in intervals for t in range(s, e)}


def reference(kernels, activities, calls):
    """Brute force of one row: kernels (start, end, corr), all activities, calls (start, end, corr)."""
    span = max(e for _, e in activities) - min(s for s, _ in activities)
    busy = sum(e - s for s, e, _ in kernels)
    ordered = sorted((s, e) for s, e, _ in kernels)
    gaps = [g for g in (ordered[i][0] - ordered[i - 1][1] for i in range(1, len(ordered))) if g > 0]
    launched = {c for _, _, c in kernels}
    api = covered((s, e) for s, e, c in calls if c in launched)
    overlap = len(api & covered((s, e) for s, e, _ in kernels))
    pct = (lambda a, b: None if b == 0 else math.floor(a * 1000.0 / b + 0.5 + 1e-9) / 10)  # half away from 0
    return [span, len(activities), len(kernels), busy, pct(busy, span), len(gaps), sum(gaps),
            int(sum(gaps) / len(gaps)) if gaps else None, max(gaps) if gaps else None,
            len(api), overlap, pct(overlap, len(api))]


event = st.tuples(st.integers(0, 80), st.integers(0, 25), st.integers(0, 2))


@settings(max_examples=40, deadline=None)
@given(st.lists(event, max_size=10), st.lists(event, max_size=4),
       st.lists(st.tuples(st.integers(0, 80), st.integers(0, 25)), max_size=12))
def test_rows_match_brute_force(tmp_path_factory, kernels, copies, call_spans):
    writer = ReportWriter(tmp_path_factory.mktemp("timeline") / "r.asysrep")
    name = writer.strings(["k", "cudaLaunchKernel"])
    writer.create("kernels")
    writer.create("memcpy")
    writer.create("runtime")
    k = [(s, s + d, i + 1, dev) for i, (s, d, dev) in enumerate(kernels)]
    if k:
        writer.add("kernels", start=[r[0] for r in k], end=[r[1] for r in k], correlationId=[r[2] for r in k],
                   deviceId=[r[3] for r in k], globalPid=1 << 24, demangledName=name[0], shortName=name[0],
                   mangledName=name[0])
    if copies:
        writer.add("memcpy", start=[s for s, _, _ in copies], end=[s + d for s, d, _ in copies],
                   deviceId=[dev for _, _, dev in copies], bytes=1, copyKind=1)
    calls = [(s, s + d, i + 1) for i, (s, d) in enumerate(call_spans)]  # correlation ids 1.. (some unmatched)
    if calls:
        writer.add("runtime", start=[c[0] for c in calls], end=[c[1] for c in calls],
                   correlationId=[c[2] for c in calls], globalTid=(1 << 24) + 5, nameId=name[1])
    writer.close()
    run = run_cli("stats", "-r", RULE, "--format", "json", writer.path)
    assert run.code == 0, run.err
    got = [list(row.values()) for row in json.loads(run.out)]
    activities = [(r[0], r[1], r[3]) for r in k] + [(s, s + d, dev) for s, d, dev in copies]
    expected = []
    if activities:
        expected.append(["All"] + reference([r[:3] for r in k], [a[:2] for a in activities], calls))
    for dev in sorted({a[2] for a in activities}):
        on = [r[:3] for r in k if r[3] == dev]
        expected.append([str(dev)] + reference(on, [a[:2] for a in activities if a[2] == dev], calls))
    assert got == expected


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_smoke(path):
    before = fingerprint(path)
    run = run_cli("stats", "-r", RULE, "--format", "json", path)
    assert "Traceback" not in run.err
    if run.code == 2:
        assert "does not contain CUDA kernel data" in run.err
    else:
        assert run.code == 0, run.err
        rows = json.loads(run.out)
        assert rows[0]["Device"] == "All"
        assert rows[0]["Operations"] == sum(r["Operations"] for r in rows[1:])
        assert rows[0]["Launch API Overlap (ns)"] <= rows[0]["Launch API Union (ns)"]
    assert fingerprint(path) == before
