"""hggc_ppu_time_breakdown and intervals.difference: golden output, options, brute-force
properties, the Nsight corpus. (The TraceLens goldens are in test_kineto_goldens.py.)"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.compute import intervals
from asysstats.synth.writer import ReportWriter

from conftest import corpus_params, fingerprint, run_cli

RULE = "hggc_ppu_time_breakdown"
HEADER = "Row#,Device,Type,Time (ns),Time (%),"
TYPES = ["Total", "Busy", "Idle", "Computation", "Communication", "Exposed Communication", "Memcpy", "Exposed Memcpy"]
PID = 3


def build(writer, nccl="ncclDevKernel_AllReduce_Sum_f32(ncclDevComm*)"):
    """Device 0 (all launched by calls of thread PID.1), device 1 an orphan kernel (no call).

        time    0    50   100  150  200  250  300  350  400  450  500
        gemm    [---------)                                             computation
        nccl         [--------------)                                   communication
        memcpy                 [---------)          [----)              memcpy
        memset                                [-)                       computation  [300,320)
        orphan (device 1, correlation 9, no call)                  [-)  [500,520)
    """
    gemm, comm, launch = writer.strings(["gemm_kernel", nccl, "cudaLaunchKernel"])
    writer.add("kernels", start=[0, 50, 500], end=[100, 200, 520], deviceId=[0, 0, 1], correlationId=[1, 2, 9],
               globalPid=PID << 24, demangledName=[gemm, comm, gemm], shortName=[gemm, comm, gemm],
               mangledName=[gemm, comm, gemm])
    writer.add("memcpy", start=[150, 400], end=[250, 450], deviceId=0, correlationId=[3, 4], globalPid=PID << 24,
               bytes=8, copyKind=1)
    writer.add("memset", start=[300], end=[320], deviceId=0, correlationId=5, globalPid=PID << 24, bytes=8)
    writer.add("runtime", start=[-50, -40, -30, -20, -10], end=[-45, -35, -25, -15, -5], correlationId=[1, 2, 3, 4, 5],
               globalTid=(PID << 24) + 1, nameId=launch)
    writer.close()
    return writer.path


def csv_rows(path, rule=RULE):
    run = run_cli("stats", "-r", rule, "--format", "csv", path)
    assert run.code == 0, run.err
    assert run.out.splitlines()[0] == HEADER
    return run.out.splitlines()[1:]


def rows(device, times, shares, first=1):
    return [f'{first + i},"{device}","{t}",{v},{s},' for i, (t, v, s) in enumerate(zip(TYPES, times, shares))]


DEVICE0 = rows("0", [450, 320, 130, 120, 150, 100, 150, 100], [100.0, 71.1, 28.9, 26.7, 33.3, 22.2, 33.3, 22.2], 9)


def test_golden_csv(writer):
    # All: union [0,250)+[300,320)+[400,450)+[500,520) = 340 of 520; computation gemm+memset+orphan = 140;
    # exposed communication [100,200); exposed memcpy [200,250)+[400,450)
    assert csv_rows(build(writer)) == \
        rows("All", [520, 340, 180, 140, 150, 100, 150, 100], [100.0, 65.4, 34.6, 26.9, 28.8, 19.2, 28.8, 19.2]) + \
        DEVICE0 + rows("1", [20, 20, 0, 20, 0, 0, 0, 0], [100.0, 100.0, 0.0, 100.0, 0.0, 0.0, 0.0, 0.0], 17)


def test_linked_only_leaves_out_activities_without_their_launch_call(writer):
    device0 = [450, 320, 130, 120, 150, 100, 150, 100], [100.0, 71.1, 28.9, 26.7, 33.3, 22.2, 33.3, 22.2]
    assert csv_rows(build(writer), f"{RULE}:linked-only") == rows("All", *device0) + DEVICE0  # no device 1


@pytest.mark.parametrize("name", ["pcclAllReduceKernel", "RCCL_generic", "cross_device_reduce_2stage"])
def test_communication_names(tmp_path, name):
    got = csv_rows(build(ReportWriter(tmp_path / "r.asysrep"), nccl=name), f"{RULE}:device=0")
    assert got[4:6] == ['5,"All","Communication",150,33.3,', '6,"All","Exposed Communication",100,22.2,']


def test_communication_option_replaces_the_default(writer):
    got = csv_rows(build(writer), f"{RULE}:device=0:communication=^gemm")
    # gemm [0,100) is now communication, exposed only before nccl starts; nccl and memset compute
    assert got[3:8] == ['4,"All","Computation",170,37.8,', '5,"All","Communication",100,22.2,',
                        '6,"All","Exposed Communication",50,11.1,', '7,"All","Memcpy",150,33.3,',
                        '8,"All","Exposed Memcpy",100,22.2,']


def test_bad_regex_is_one_line(writer):
    run = run_cli("stats", "-r", f"{RULE}:communication=(", build(writer))
    assert run.code == 2 and "option 'communication'" in run.err and len(run.err.strip().splitlines()) == 1


def test_no_activity_is_header_only(writer):
    writer.create("kernels")
    writer.close()
    run = run_cli("stats", "-r", RULE, "--format", "csv", writer.path)
    assert (run.code, run.out) == (0, HEADER + "\n")


def test_missing_tables_name_the_collection_option(writer):
    writer.add("runtime", start=[1], end=[2], globalTid=1, nameId=writer.strings(["cudaFree"])[0])
    writer.close()
    run = run_cli("stats", "-r", RULE, writer.path)
    assert run.code == 2 and "does not contain HGGC kernel data (collect with --trace hggc)" in run.err


# -- properties -------------------------------------------------------------------------------

def covered(pairs) -> set[int]:
    return {t for s, e in pairs for t in range(s, e)}


segments = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 12)), max_size=8)


@settings(max_examples=60, deadline=None)
@given(segments, segments)
def test_difference_matches_brute_force(a, b):
    a = [(s, s + d) for s, d in a]
    b = [(s, s + d) for s, d in b]
    col = (lambda pairs, i: np.array([p[i] for p in pairs], dtype=np.int64))
    starts, ends = intervals.difference(col(a, 0), col(a, 1), col(b, 0), col(b, 1))
    assert covered(zip(starts.tolist(), ends.tolist())) == covered(a) - covered(b)
    assert (ends > starts).all() and (starts[1:] > ends[:-1]).all()  # sorted, disjoint, not touching
    assert intervals.segments_length(starts, ends) == len(covered(a) - covered(b))


def reference(acts):
    """The eight figures of one group: acts are (start, end, bucket) with bucket comp/comm/copy."""
    every = covered((s, e) for s, e, _ in acts)
    by = {k: covered((s, e) for s, e, b in acts if b == k) for k in ("comp", "comm", "copy")}
    total = max(e for _, e, _ in acts) - min(s for s, e, _ in acts if e > s) if every else 0
    return [total, len(every), total - len(every), len(by["comp"]), len(by["comm"]), len(by["comm"] - by["comp"]),
            len(by["copy"]), len(by["copy"] - by["comp"] - by["comm"])]


activity = st.tuples(st.integers(0, 60), st.integers(1, 15), st.sampled_from(["gemm", "nccl_ar", "copy", "set"]),
                     st.integers(0, 1), st.booleans())


@settings(max_examples=50, deadline=None)
@given(st.lists(activity, min_size=1, max_size=10), st.booleans())
def test_rows_match_brute_force(tmp_path_factory, acts, linked_only):
    writer = ReportWriter(tmp_path_factory.mktemp("breakdown") / "r.asysrep")
    gemm, nccl, launch = writer.strings(["gemm", "nccl_ar", "launch"])
    for table in ("kernels", "memcpy", "memset", "runtime"):
        writer.create(table)
    for i, (s, d, kind, dev, linked) in enumerate(acts, 1):
        common = dict(start=[s], end=[s + d], deviceId=dev, correlationId=i, globalPid=1 << 24)
        if kind in ("gemm", "nccl_ar"):
            name = gemm if kind == "gemm" else nccl
            writer.add("kernels", demangledName=name, shortName=name, mangledName=name, **common)
        else:
            writer.add("memcpy" if kind == "copy" else "memset", bytes=1, **common)
        if linked:
            writer.add("runtime", start=[0], end=[1], correlationId=i, globalTid=(1 << 24) + 1, nameId=launch)
    writer.close()
    run = run_cli("stats", "-r", RULE + (":linked-only" if linked_only else ""), "--format", "json", writer.path)
    assert run.code == 0, run.err
    kept = [(s, s + d, {"gemm": "comp", "set": "comp", "nccl_ar": "comm", "copy": "copy"}[k], dev)
            for s, d, k, dev, linked in acts if linked or not linked_only]
    expected = []
    for label, group in [("All", kept)] * bool(kept) + [(str(v), [a for a in kept if a[3] == v])
                                                         for v in sorted({a[3] for a in kept})]:
        expected += [[label, t, v] for t, v in zip(TYPES, reference([a[:3] for a in group]))]
    assert [[r["Device"], r["Type"], r["Time (ns)"]] for r in json.loads(run.out)] == expected


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_smoke(path):
    before = fingerprint(path)
    run = run_cli("stats", "-r", RULE, "--format", "json", path)
    assert "Traceback" not in run.err
    if run.code == 2:
        assert "does not contain CUDA kernel data" in run.err
    else:
        assert run.code == 0, run.err
        got = {(r["Device"], r["Type"]): r["Time (ns)"] for r in json.loads(run.out)}
        if got:
            total, busy, idle = (got["All", t] for t in ("Total", "Busy", "Idle"))
            assert busy + idle == total and busy >= got["All", "Computation"] >= 0
    assert fingerprint(path) == before
