"""hgtx_step_sum: golden output on a hand-built report, options, a brute-force property test,
the Nsight corpus. (The TensorBoard plugin's overview golden is in test_kineto_goldens.py.)"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.synth.writer import ReportWriter

from conftest import corpus_params, fingerprint, run_cli

RULE = "hgtx_step_sum"
HEADER = ("Row#,Step,PID,TID,Start (ns),Step Time (ns),Range Time (ns),PPU Ops,Kernel (ns),Memcpy (ns),"
          "Memset (ns),Communication (ns),PPU Busy (%),")
T1, T2 = (1 << 24) | 1, (2 << 24) | 2
PUSHPOP = 59


def build(writer):
    """Process 1, thread 1: two steps and a 'forward' range; process 2: one step, no PPU work.

        time        0    20   50   100  150  170  200  260  300
        T1 ranges   [ProfilerStep#1 ----)[ProfilerStep#2 ----)
                      [fwd --)                                     forward [10,50)
        T1 calls      c1 c2     c3 c4 c5                           c1 10, c2 60 | c3 110, c4 120, c5 130
        K1 (c1)         [--------------)                           [20,150)
        memcpy (c2)                   [-)                          [160,170)
        K2 (c3)                    [----)                          [150,180)
        memset (c4)                     [--)                       [175,190)
        nccl (c5)                          [------)                [185,260)
        orphan kernel (no call)                      [-)           [300,310)
        T2 range ProfilerStep#7 [50,80)
    Step 1: window [0,170) (its memcpy ends at 170); step 2 starts there, ends at 260 (nccl).
    """
    k, nccl, launch = writer.strings(["k_gemm", "ncclKernel_AllReduce", "cudaLaunchKernel"])
    writer.add("hgtx", start=[0, 10, 100, 50], end=[100, 50, 200, 80], eventType=PUSHPOP, globalTid=[T1, T1, T1, T2],
               domainId=0, text=["ProfilerStep#1", "forward", "ProfilerStep#2", "ProfilerStep#7"])
    writer.add("runtime", start=[10, 60, 110, 120, 130], end=[12, 62, 112, 122, 132], correlationId=[1, 2, 3, 4, 5],
               globalTid=T1, nameId=launch)
    writer.add("kernels", start=[20, 150, 185, 300], end=[150, 180, 260, 310], correlationId=[1, 3, 5, 9], deviceId=0,
               globalPid=1 << 24, demangledName=[k, k, nccl, k], shortName=[k, k, nccl, k], mangledName=[k, k, nccl, k])
    writer.add("memcpy", start=[160], end=[170], correlationId=2, deviceId=0, globalPid=1 << 24, bytes=8, copyKind=1)
    writer.add("memset", start=[175], end=[190], correlationId=4, deviceId=0, globalPid=1 << 24, bytes=8)
    writer.close()
    return writer.path


def csv_rows(path, rule=RULE):
    run = run_cli("stats", "-r", rule, "--format", "csv", path)
    assert run.code == 0, run.err
    assert run.out.splitlines()[0] == HEADER
    return run.out.splitlines()[1:]


def test_golden_csv(writer):
    assert csv_rows(build(writer)) == [
        # step 1 [0,170): kernels K1 [20,150) and K2 [150,170); the memcpy lies under K2
        '1,"ProfilerStep#1",1,1,0,170,100,2,150,0,0,0,88.2,',
        # process 2 counts only its own PPU work: none
        '2,"ProfilerStep#7",2,2,50,30,30,0,0,0,0,0,0.0,',
        # step 2 [170,260): K2 [170,180), memset [180,190) after K2, communication [190,260)
        '3,"ProfilerStep#2",1,1,170,90,100,3,10,0,10,70,100.0,',
        # means (truncated): 290/3, 230/3, 5/3, 160/3, 0, 10/3, 70/3; busy 240 of 290
        '4,"Average","-","-","-",96,76,1,53,0,3,23,82.8,',
    ]


def test_range_option_selects_other_ranges(writer):
    # forward [10,50) launched K1 only: window [10,150)
    assert csv_rows(build(writer), f"{RULE}:range=^forward$") == [
        '1,"forward",1,1,10,140,40,1,130,0,0,0,92.9,', '2,"Average","-","-","-",140,40,1,130,0,0,0,92.9,']


def test_communication_option(writer):
    got = csv_rows(build(writer), f"{RULE}:communication=nomatch:rows=3")
    assert got[2] == '3,"ProfilerStep#2",1,1,170,90,100,3,85,0,5,0,100.0,'  # the nccl kernel is a kernel now


def test_json_average_row_is_typed(writer):
    run = run_cli("stats", "-r", RULE, "--format", "json", build(writer))
    last = json.loads(run.out)[-1]
    assert (last["Step"], last["PID"], last["Start (ns)"], last["Step Time (ns)"]) == ("Average", None, None, 96)


def test_no_matching_range_is_header_only(writer):
    path = build(writer)
    run = run_cli("stats", "-r", f"{RULE}:range=^nothing", "--format", "csv", path)
    assert (run.code, run.out) == (0, HEADER + "\n")


def test_steps_without_ppu_tables(writer):
    writer.add("hgtx", start=[0, 40], end=[30, 50], eventType=PUSHPOP, globalTid=T1, text=["ProfilerStep#0"] * 2)
    writer.close()
    assert csv_rows(writer.path) == ['1,"ProfilerStep#0",1,1,0,30,30,0,0,0,0,0,0.0,',
                                     '2,"ProfilerStep#0",1,1,40,10,10,0,0,0,0,0,0.0,',
                                     '3,"Average","-","-","-",20,20,0,0,0,0,0,0.0,']


def test_missing_hgtx_names_the_collection_option(writer):
    writer.create("kernels")
    writer.close()
    run = run_cli("stats", "-r", RULE, writer.path)
    assert run.code == 2 and "does not contain HGTX data (collect with --trace hgtx)" in run.err


# -- properties -------------------------------------------------------------------------------

def covered(pairs) -> set[int]:
    return {t for s, e in pairs for t in range(s, e)}


def reference(steps, acts):
    """Rows (start, step time, ops, kernel, memcpy, memset, comm) of consecutive steps on one
    thread; acts are (start, end, kind, launch time or None)."""
    out, previous = [], None
    for s, e in steps:
        launched = [a for a in acts if a[3] is not None and s <= a[3] < e]
        start = s if previous is None else max(s, previous)
        end = max([e, start] + [max(a[1], a[0]) for a in launched])
        previous = end
        window = set(range(start, end))
        higher: set[int] = set()
        times = []
        for kind in ("kernel", "copy", "set", "comm"):
            mine = covered((a[0], a[1]) for a in acts if a[2] == kind) & window
            times.append(len(mine - higher))
            higher |= mine
        out.append([start, end - start, len(launched)] + times)
    return out


activity = st.tuples(st.integers(0, 80), st.integers(0, 20), st.sampled_from(["kernel", "comm", "copy", "set"]),
                     st.one_of(st.none(), st.integers(0, 79)))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 25), min_size=1, max_size=4), st.lists(activity, max_size=8))
def test_rows_match_brute_force(tmp_path_factory, lengths, acts):
    writer = ReportWriter(tmp_path_factory.mktemp("steps") / "r.asysrep")
    gemm, nccl, launch = writer.strings(["gemm", "nccl_ar", "launch"])
    for table in ("kernels", "memcpy", "memset", "runtime"):
        writer.create(table)
    edges = [sum(lengths[:i]) for i in range(len(lengths) + 1)]
    steps = list(zip(edges[:-1], edges[1:]))
    writer.add("hgtx", start=[s for s, _ in steps], end=[e for _, e in steps], eventType=PUSHPOP, globalTid=T1,
               text=[f"ProfilerStep#{i}" for i in range(len(steps))])
    for i, (s, d, kind, call) in enumerate(acts, 1):
        common = dict(start=[s], end=[s + d], deviceId=0, correlationId=i, globalPid=1 << 24)
        if kind in ("kernel", "comm"):
            name = gemm if kind == "kernel" else nccl
            writer.add("kernels", demangledName=name, shortName=name, mangledName=name, **common)
        else:
            writer.add("memcpy" if kind == "copy" else "memset", bytes=1, **common)
        if call is not None:
            writer.add("runtime", start=[call], end=[call + 1], correlationId=i, globalTid=T1, nameId=launch)
    writer.close()
    run = run_cli("stats", "-r", RULE, "--format", "json", writer.path)
    assert run.code == 0, run.err
    keys = ["Start (ns)", "Step Time (ns)", "PPU Ops", "Kernel (ns)", "Memcpy (ns)", "Memset (ns)",
            "Communication (ns)"]
    got = [[row[k] for k in keys] for row in json.loads(run.out)[:-1]]
    assert got == reference(steps, [(s, s + d, kind, call) for s, d, kind, call in acts])


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_smoke(path):
    before = fingerprint(path)
    run = run_cli("stats", "-r", f"{RULE}:range=.", "--format", "json", path)
    assert "Traceback" not in run.err
    if run.code == 2:
        assert "does not contain NV Tools Extension (NVTX) data (collect with nsys profile --trace nvtx)" in run.err
    else:
        assert run.code == 0, run.err
        rows = json.loads(run.out)
        assert not rows or rows[-1]["Step"] == "Average"
        assert all(r["Step Time (ns)"] >= 0 and r["Kernel (ns)"] <= r["Step Time (ns)"] for r in rows)
    assert fingerprint(path) == before
