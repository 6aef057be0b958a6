"""pccl_desync_trace / pccl_desync_summary: golden output, options, brute force, corpus."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.synth.writer import NSYS, ReportWriter

from conftest import corpus_params, fingerprint, run_cli

TRACE = ("Row#,Start (ns),Duration (ns),Overlap (ns),Desync Rate (%),Last Process,Last Device,Last Kernel,"
         "Max Duration (ns),Min Duration (ns),Avg Duration (ns),Instances,Kernel Name,")
SUMMARY = ("Row#,Time (%),Count,Desync Avg (%),Desync Med (%),Desync Min (%),Desync Max (%),"
           "Desync StdDev (%),Total Duration (ns),Total Overlap (ns),Kernel Name,")  # the reference's example header
P90_SUMMARY = SUMMARY.replace("Desync Med (%),", "Desync Med (%),Desync P90 (%),")  # with the p90 flag
ALLREDUCE = "pcclKernel_AllReduce_RING_LL_Sum_uint8_t(ncclWorkElem)"
BROADCAST = "void ncclDevKernel_Broadcast_RING(ncclWorkElem)"
REDUCE = "NcclKernel_Reduce"
HELPER = "my_nccl_helper"  # contains nccl but does not start with it: not a PCCL kernel

# One process per device (pid 1000 + device). Time in ns:
#   A  dev0 [0,100) dev1 [10,100) dev2 [20,105) dev3 [40,110)   all four run in [40,100): overlap 60
#   B  dev0 [200,250) dev1 [240,300) dev2 [290,340)             chained, never all at once: desync 100%
#   C  dev0 [400,450)   E dev1 [450,470) (touches C: separate)  single-device communications
#   D  BROADCAST dev0 [500,600) dev1 [500,600)                  same start: last = higher device
#   R  REDUCE dev3 [600,650);  HELPER dev0 [0,300) is ignored
KERNELS = [  # (name, device, start, end, correlationId)
    (ALLREDUCE, 0, 0, 100, 1), (ALLREDUCE, 1, 10, 100, 2), (ALLREDUCE, 2, 20, 105, 3), (ALLREDUCE, 3, 40, 110, 4),
    (ALLREDUCE, 0, 200, 250, 5), (ALLREDUCE, 1, 240, 300, 6), (ALLREDUCE, 2, 290, 340, 7),
    (ALLREDUCE, 0, 400, 450, 8), (ALLREDUCE, 1, 450, 470, 9),
    (BROADCAST, 0, 500, 600, 10), (BROADCAST, 1, 500, 600, 11), (REDUCE, 3, 600, 650, 12),
    (HELPER, 0, 0, 300, 13),
]


def add_kernels(writer, kernels, with_ranges=False):
    name, dev, start, end, corr = (list(c) for c in zip(*kernels))
    pids = [(1000 + d) << 24 for d in dev]
    writer.add("kernels", start=start, end=end, deviceId=dev, correlationId=corr, globalPid=pids,
               demangledName=writer.strings(name), shortName=writer.strings(name))
    if with_ranges:  # an HGTX range "step" around the launches of communication A (correlation 1-4)
        tids = [p + 7 for p in pids]
        writer.add("runtime", start=[s - 5 for s in start], end=[s - 4 for s in start], globalTid=tids,
                   correlationId=corr, nameId=writer.string("hggcLaunchKernel"))
        writer.add("hgtx", start=-10, end=39, eventType=59, globalTid=tids[:4], text="step")
    writer.close()
    return writer.path


def csv(path, rule):
    run = run_cli("stats", "-r", rule, "--format", "csv", path)
    assert run.code == 0, run.err
    return run.out.splitlines()


def test_trace_golden(writer):
    assert csv(add_kernels(writer, KERNELS), "pccl_desync_trace") == [
        TRACE,
        f'1,200,140,0,100.0,1002,2,7,60,50,53,3,"{ALLREDUCE}",',
        f'2,0,110,60,45.5,1003,3,4,100,70,86,4,"{ALLREDUCE}",',
        f'3,600,50,50,0.0,1003,3,12,50,50,50,1,"{REDUCE}",',
        f'4,400,50,50,0.0,1000,0,8,50,50,50,1,"{ALLREDUCE}",',
        f'5,450,20,20,0.0,1001,1,9,20,20,20,1,"{ALLREDUCE}",',
        f'6,500,100,100,0.0,1001,1,11,100,100,100,2,"{BROADCAST}",',
    ]


def test_summary_golden(writer):
    # ALLREDUCE rates 0, 0, 45.45, 100: mean 36.36, median 22.73, P90 (nearest rank 4 of 4) 100, std 41.16
    path = add_kernels(writer, KERNELS)
    assert csv(path, "pccl_desync_summary:p90") == [
        P90_SUMMARY,
        f'1,68.1,4,36.4,22.7,100.0,0.0,100.0,41.2,320,130,"{ALLREDUCE}",',
        f'2,21.3,1,0.0,0.0,0.0,0.0,0.0,0.0,100,100,"{BROADCAST}",',
        f'3,10.6,1,0.0,0.0,0.0,0.0,0.0,0.0,50,50,"{REDUCE}",',
    ]
    assert csv(path, "pccl_desync_summary")[:2] == [
        SUMMARY, f'1,68.1,4,36.4,22.7,0.0,100.0,41.2,320,130,"{ALLREDUCE}",']


@pytest.mark.parametrize("option, row", [
    ("device=0/1", f'2,0,100,90,10.0,1001,1,2,100,90,95,2,"{ALLREDUCE}",'),
    ("base", '2,0,110,60,45.5,1003,3,4,100,70,86,4,"pcclKernel_AllReduce_RING_LL_Sum_uint8_t",'),
    ("mangled", f'2,0,110,60,45.5,1003,3,4,100,70,86,4,"{ALLREDUCE}",'),  # no mangled name stored
])
def test_trace_options(writer, option, row):
    assert csv(add_kernels(writer, KERNELS), f"pccl_desync_trace:{option}")[2] == row


def test_hgtx_name_prefixes_the_range(writer):
    lines = csv(add_kernels(writer, KERNELS, with_ranges=True), "pccl_desync_trace:hgtx-name")
    assert lines[2] == f'2,0,110,60,45.5,1003,3,4,100,70,86,4,"step/{ALLREDUCE}",'
    assert lines[1].endswith(f'"{ALLREDUCE}",')


def test_nsight_export_nccl_kernels(tmp_path):
    w = ReportWriter(tmp_path / "n.sqlite", dialect=NSYS)
    nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
    path = add_kernels(w, [(nccl, 0, 0, 100, 1), (nccl, 1, 50, 120, 2)])
    assert csv(path, "pccl_desync_summary")[1] == f'1,100.0,1,58.3,58.3,58.3,58.3,0.0,120,50,"{nccl}",'


def test_no_pccl_kernels_prints_header_only(writer):
    lines = csv(add_kernels(writer, [("gemm", 0, 0, 10, 1)]), "pccl_desync_summary")
    assert lines == [SUMMARY]


# -- brute force ----------------------------------------------------------------------------
def brute_communications(kernels):
    """Components of the same-name 'overlaps' graph by repeated merging (no sorting tricks)."""
    live = [k for k in kernels if k[3] > k[2]]
    comps = [[k] for k in live]
    merged = True
    while merged:
        merged = False
        for i in range(len(comps)):
            for j in range(i + 1, len(comps)):
                if any(a[0] == b[0] and a[2] < b[3] and b[2] < a[3] for a in comps[i] for b in comps[j]):
                    comps[i] += comps.pop(j)
                    merged = True
                    break
            if merged:
                break
    out = []
    for comp in comps:
        start, end = min(k[2] for k in comp), max(k[3] for k in comp)
        overlap = max(0, min(k[3] for k in comp) - max(k[2] for k in comp))
        last = max(comp, key=lambda k: (k[2], k[1], k[4]))
        out.append((start, end - start, overlap, 1000 + last[1], last[1], last[4], len(comp), comp[0][0]))
    return sorted(out)


kernels_st = st.lists(st.tuples(st.sampled_from(["ncclA", "pcclB"]), st.integers(0, 2), st.integers(0, 40),
                                st.integers(0, 12)), min_size=1, max_size=14)


@settings(max_examples=50, deadline=None)
@given(kernels_st)
def test_trace_matches_brute_force(tmp_path_factory, rows):
    kernels = [(n, d, s, s + dur, i + 1) for i, (n, d, s, dur) in enumerate(rows)]
    path = add_kernels(ReportWriter(tmp_path_factory.mktemp("d") / "r.asysrep"), kernels)
    run = run_cli("stats", "-r", "pccl_desync_trace", "--format", "json", path)
    assert run.code == 0, run.err
    got = sorted((r["Start (ns)"], r["Duration (ns)"], r["Overlap (ns)"], r["Last Process"], r["Last Device"],
                  r["Last Kernel"], r["Instances"], r["Kernel Name"]) for r in json.loads(run.out))
    assert got == brute_communications(kernels)


@pytest.mark.parametrize("path", corpus_params())
@pytest.mark.parametrize("rule", ["pccl_desync_trace", "pccl_desync_summary:hgtx-name"])
def test_corpus_runs(path, rule):
    before = fingerprint(path)
    run = run_cli("stats", "-r", rule, "--format", "csv", path)
    assert "Traceback" not in run.err
    if run.code == 2:
        assert "does not contain CUDA kernel data" in run.err
    else:
        assert run.code == 0, run.err
        assert run.out.splitlines()[0] in (TRACE, SUMMARY)
    assert fingerprint(path) == before
