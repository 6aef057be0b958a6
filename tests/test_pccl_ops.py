"""pccl_op_sum: the reference's example rows, P2P and collective rules, options, brute force."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.synth.writer import ReportWriter

from conftest import corpus_params, fingerprint, run_cli

HEADER = ("Row#,Trans Time (ns),Trans Percent (%),Total Time (ns),Instances,Device Mask,Trans Size (bytes),"
          "Trans Bandwidth (B/s),OP Name,")
KERNEL = "pcclKernel_AllReduce_RING_LL_Sum_bf16(ncclWorkElem)"
H = "9da3d23b9ccef54c"


def pid_of(device):
    return (1000 + device) << 24  # one process per device


def add_ops(writer, execs, close=True):
    """execs: (annotation text, device, kernel start, kernel end). Each execution gets an HGTX
    range (domain NCCL) on its process's thread [s-600, s-300) around its launch call [s-500, s-400)."""
    text, dev, start, end = (np.asarray(c, dtype=object if i == 0 else np.int64) for i, c in enumerate(zip(*execs)))
    assert start.min() >= 600, "HGTX times must stay positive (a negative end reads as an open range)"
    tid = np.array([pid_of(d) + 1 for d in dev.tolist()], dtype=np.int64)
    corr = np.arange(1, len(dev) + 1)
    procs = sorted(set(dev.tolist()))
    writer.add("hgtx", start=0, end=None, eventType=75, globalTid=[pid_of(d) for d in procs], domainId=1, text="NCCL")
    writer.add("hgtx", start=start - 600, end=start - 300, eventType=59, globalTid=tid, domainId=1, text=text)
    writer.add("runtime", start=start - 500, end=start - 400, globalTid=tid, correlationId=corr,
               nameId=writer.string("hggcLaunchKernel"))
    writer.add("kernels", start=start, end=end, deviceId=dev, correlationId=corr,
               globalPid=[pid_of(d) for d in dev.tolist()], demangledName=writer.string(KERNEL))
    if close:
        writer.close()
    return writer.path


def allreduce(c, rank, b, w=4, op="AllReduce", d=9, h=H):
    return f"{op}, p:0, c:{c}, d:{d}, r:{rank}, w:{w}, h:{h}, t:1, b:{b}"


# The reference's rows: (count, rank 1's buffers, instances, Trans Time, Total Time).
REFERENCE = [(83886080, "0x301a000000/0x302d000000", 461, 3899723152, 4149397116),
             (76794880, "0x301a000000/0x3023279800", 129, 999480648, 1018779730),
             (81920, "0x573c00000/0x573c28000", 1419, 100490800, 146110859)]
REFERENCE_ROWS = [
    '1,3899723152,94.0,4149397116,461,"0xF",464057794560,118997625337,"AllReduce, p:0, c:83886080, d:9, r:1, w:4, '
    'h:9da3d23b9ccef54c, t:1, b:0x301a000000/0x302d000000",',
    '2,999480648,98.1,1018779730,129,"0xF",118878474240,118940246094,"AllReduce, p:0, c:76794880, d:9, r:1, w:4, '
    'h:9da3d23b9ccef54c, t:1, b:0x301a000000/0x3023279800",',
    '3,100490800,68.8,146110859,1419,"0xF",1394933760,13881208628,"AllReduce, p:0, c:81920, d:9, r:1, w:4, '
    'h:9da3d23b9ccef54c, t:1, b:0x573c00000/0x573c28000",',
]


def reference_execs():
    """Every instance: device 0 runs the longest kernel, device 1 the shortest (and starts
    first, so rank 1's text names the operator), devices 2 and 3 in between; the per-instance
    durations add up to the reference's Trans Time and Total Time."""
    execs, t = [], 10_000
    offset = {1: 0, 0: 1000, 2: 2000, 3: 3000}
    for count, buffers, n, trans, total in REFERENCE:
        for i in range(n):
            short = trans // n + (i < trans % n)
            long = total // n + (i < total % n)
            for dev, dur in ((0, long), (1, short), (2, (short + long) // 2), (3, (short + long) // 2)):
                b = buffers if dev == 1 else f"0x{dev}000/0x{dev}001"
                execs.append((allreduce(count, dev, b), dev, t + offset[dev], t + offset[dev] + dur))
            t += 20_000_000
    return execs


def csv(path, rule="pccl_op_sum", *extra):
    run = run_cli("stats", "-r", rule, "--format", "csv", *extra, path)
    assert run.code == 0, run.err
    return run.out.splitlines()


def test_reference_example_rows(writer):
    assert csv(add_ops(writer, reference_execs())) == [HEADER] + REFERENCE_ROWS


def test_reference_options(writer):
    path = add_ops(writer, reference_execs())
    assert csv(path, "pccl_op_sum:range-exclude=c\\:81920") == [HEADER] + REFERENCE_ROWS[:2]
    assert [line.split(",", 1)[1] for line in csv(path, "pccl_op_sum:range-include=c\\:8192[0-9]/c\\:767")[1:]] \
        == [line.split(",", 1)[1] for line in REFERENCE_ROWS[1:]]
    two = csv(path, "pccl_op_sum:device=0/1")[1]  # the same kernels bound the time; half the ranks move data
    assert two.startswith('1,3899723152,94.0,4149397116,461,"0x3",232028897280,59498812668,')


def p2p_execs():
    send = allreduce(1000, 0, "0x1", w=2, op="Send", d=7, h="aa")
    recv = allreduce(1000, 1, "0x2", w=2, op="Recv", d=7, h="aa")
    return [(send, 0, 1000, 1100), (recv, 1, 1010, 1090), (send, 0, 1200, 1260), (recv, 1, 1205, 1250)]


def test_point_to_point_counts_every_kernel(writer):
    assert csv(add_ops(writer, p2p_execs()))[1:] == [
        '1,160,100.0,160,2,"0x1",8000,50000000000,"Send, p:0, c:1000, d:7, r:0, w:2, h:aa, t:1, b:0x1",',
        '2,125,100.0,125,2,"0x2",8000,64000000000,"Recv, p:0, c:1000, d:7, r:1, w:2, h:aa, t:1, b:0x2",',
    ]


def collective_execs():
    # instance 0: dev0 [1000,1100) dev1 [1050,1120)   instance 1: dev0 [1300,1350) dev1 [1290,1400)
    # a single-device AllReduce (w:1) on device 2 moves nothing
    texts = [allreduce(100, r, f"0x{r}", w=2, d=7, h="bb") for r in (0, 1)]
    return [(texts[0], 0, 1000, 1100), (texts[1], 1, 1050, 1120), (texts[0], 0, 1300, 1350),
            (texts[1], 1, 1290, 1400), (allreduce(5, 0, "0x9", w=1, d=7, h="cc"), 2, 1600, 1630)]


def test_collective_instances_and_single_device(writer):
    assert csv(add_ops(writer, collective_execs()))[1:] == [
        '1,120,57.1,210,2,"0x3",1600,13333333333,"AllReduce, p:0, c:100, d:7, r:0, w:2, h:bb, t:1, b:0x0",',
        '2,30,100.0,30,1,"0x4",0,0,"AllReduce, p:0, c:5, d:7, r:0, w:1, h:cc, t:1, b:0x9",',
    ]


def test_filter_time_keeps_instances_aligned(writer):
    writer.add("analysis", duration=1000, startTime=1000, stopTime=2000)
    path = add_ops(writer, collective_execs())
    # [1040, 1500) drops dev0's first kernel; dev0's second kernel still pairs with dev1's second
    assert csv(path, "pccl_op_sum", "--filter-time", "40/500")[1] == \
        '1,120,66.7,180,2,"0x3",1200,10000000000,"AllReduce, p:0, c:100, d:7, r:1, w:2, h:bb, t:1, b:0x1",'


def test_graph_mapping(writer):
    # The annotations enclose the creation of graph node 7 (in each process); the graph is
    # launched twice per device from outside any range.
    text = [allreduce(64, r, "0x0", w=2, d=7, h="gg") for r in (0, 1)]
    tids = [pid_of(d) + 1 for d in (0, 1)]
    writer.add("hgtx", start=0, eventType=75, globalTid=[pid_of(0), pid_of(1)], domainId=1, text="NCCL")
    writer.add("hgtx", start=10, end=20, eventType=59, globalTid=tids, domainId=1, text=text)
    writer.add("graph_nodes", start=15, end=16, globalTid=tids, graphNodeId=7, originalGraphNodeId=None)
    writer.add("runtime", start=[100, 100, 300, 300], end=[101, 101, 301, 301], globalTid=tids * 2,
               correlationId=[1, 1, 2, 2], nameId=writer.string("hggcGraphLaunch"))
    writer.add("kernels", start=[110, 115, 310, 320], end=[150, 150, 380, 380], deviceId=[0, 1, 0, 1],
               correlationId=[1, 1, 2, 2], graphNodeId=7, globalPid=[pid_of(0), pid_of(1)] * 2,
               demangledName=writer.string(KERNEL))
    writer.close()
    assert csv(writer.path)[1:] == [
        '1,95,86.4,110,2,"0x3",1024,10778947368,"AllReduce, p:0, c:64, d:7, r:0, w:2, h:gg, t:1, b:0x0",']
    assert csv(writer.path, "pccl_op_sum:no-graph-mapping") == [HEADER]


# -- brute force ----------------------------------------------------------------------------
@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([16, 32]), st.integers(0, 2), st.integers(1, 50)), min_size=1, max_size=12))
def test_collectives_match_brute_force(tmp_path_factory, rows):
    execs, slots = [], {}
    for c, dev, dur in rows:  # executions of one (count, device) run one after another
        k = slots.get((c, dev), 0)
        slots[(c, dev)] = k + 1
        start = 1000 + 10 * dev + (c == 32) * 500
        execs.append((allreduce(c, dev, "0x0", w=3, d=7, h="hh"), dev, 1_000_000 * k + start, 1_000_000 * k + start + dur))
    path = add_ops(ReportWriter(tmp_path_factory.mktemp("o") / "r.asysrep"), execs)
    expected = {}
    for c in (16, 32):
        per_k: dict[int, list] = {}
        for text, dev, s, e in execs:
            if f"c:{c}," in text:
                per_k.setdefault(s // 1_000_000, []).append((dev, e - s))
        if per_k:
            devs = {d for inst in per_k.values() for d, _ in inst}
            size = sum(len(inst) * Fraction(4, 3) * c * 4 for inst in per_k.values())
            expected[c] = (sum(min(x for _, x in i) for i in per_k.values()),
                           sum(max(x for _, x in i) for i in per_k.values()), len(per_k),
                           f"0x{sum(1 << d for d in devs):X}", round(size))
    run = run_cli("stats", "-r", "pccl_op_sum", "--format", "json", path)
    assert run.code == 0, run.err
    got = {int(r["OP Name"].split("c:")[1].split(",")[0]): (r["Trans Time (ns)"], r["Total Time (ns)"],
           r["Instances"], r["Device Mask"], r["Trans Size (bytes)"]) for r in json.loads(run.out)}
    assert got == expected


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_runs(path):
    before = fingerprint(path)
    run = run_cli("stats", "-r", "pccl_op_sum", "--format", "csv", path)
    assert "Traceback" not in run.err
    if run.code == 2:
        assert "does not contain CUDA kernel data" in run.err
    else:
        assert run.code == 0, run.err
        assert run.out.splitlines() == [HEADER]  # no PCCL annotations in the corpus
    assert fingerprint(path) == before
