"""Kineto loader against a brute-force reading of generated traces: shuffled events,
duplicated nested ops, overlapping kernels on one stream, unlinked GPU events, times in
integer or fractional microseconds (with sub-nanosecond digits)."""

from __future__ import annotations

import json
from collections import Counter
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from asysstats.reading.kineto.report import KinetoReport

PIDS = (100, 200)
TIDS = (1, 2)
DEVICE_NAMES = {"kernel": ["k_a", "k_b"], "gpu_memcpy": ["Memcpy DtoH (Device -> Pinned)"],
                "gpu_memset": ["Memset (Device)"]}
TABLES = {"kernel": "kernels", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}

# exact decimals written as JSON numbers (their float repr is the same decimal text)
times = st.one_of(st.integers(0, 10**6), st.decimals(0, 10**6, places=3).map(float),
                  st.decimals(0, 10**4, places=4).map(float))
calls = st.lists(st.tuples(times, times, st.sampled_from(PIDS), st.sampled_from(TIDS),
                           st.sampled_from(["cudaLaunchKernel", "cuLaunchKernel", "hipLaunchKernel"])), max_size=8)
device_work = st.lists(st.tuples(st.sampled_from(sorted(DEVICE_NAMES)), times, times, st.integers(0, 1),
                                 st.integers(0, 2), st.integers(0, 1), st.integers(-1, 12)), max_size=10)
ops = st.lists(st.tuples(times, times, st.sampled_from(PIDS), st.sampled_from(TIDS),
                         st.sampled_from(["aten::mm", "ProfilerStep#1"]), st.booleans(), st.integers(1, 3)),
               max_size=6)


def ns(value) -> int:
    return int((Decimal(str(value)) * 1000).to_integral_value(ROUND_HALF_EVEN))


def build(call_list, work_list, op_list) -> list[dict]:
    """API calls with correlations 1..n; device work whose correlation may match none
    (unlinked) or be absent (-1); CPU ops, some repeated identically (duplicated nesting)."""
    events = [{"ph": "X", "cat": "cuda_runtime", "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
               "args": {"correlation": i}} for i, (ts, dur, pid, tid, name) in enumerate(call_list, 1)]
    for cat, ts, dur, device, stream, which, corr in work_list:
        args = {"device": device, "stream": stream, **({"correlation": corr} if corr >= 0 else {})}
        names = DEVICE_NAMES[cat]
        events.append({"ph": "X", "cat": cat, "name": names[which % len(names)], "pid": device, "tid": stream,
                       "ts": ts, "dur": dur, "args": args})
    for ts, dur, pid, tid, name, shaped, copies in op_list:
        args = {"Input Dims": [[2, 3], []]} if shaped else {}
        events += [{"ph": "X", "cat": "cpu_op", "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
                    "args": args}] * copies
    events.append({"ph": "f", "id": 1, "pid": 0, "tid": 0, "ts": 0, "cat": "ac2g", "name": "ac2g"})
    return events


def expected(events: list[dict]) -> dict:
    """The tables read one event at a time."""
    calls = [e for e in events if e.get("cat") == "cuda_runtime"]
    cpu = [e for e in events if e.get("cat") == "cpu_op"]
    pids = Counter(e["pid"] for e in (calls or cpu))
    main = min(pids, key=lambda p: (-pids[p], p)) if pids else 0
    launch = {}
    for e in calls:
        launch.setdefault(e["args"]["correlation"], e)
    device, unlinked = Counter(), 0
    for e in events:
        if e.get("cat") in TABLES:
            corr = e["args"].get("correlation", -1)
            call = launch.get(corr)
            unlinked += corr >= 0 and call is None
            start = ns(e["ts"])
            device[(TABLES[e["cat"]], start, start + ns(e["dur"]), e["args"]["device"], e["args"]["stream"], corr,
                    call["pid"] if call else main)] += 1
    runtime = Counter((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"], (e["pid"] << 24) | e["tid"],
                       e["args"]["correlation"]) for e in calls)
    ranges = Counter((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]),
                      e["name"] + (", sizes = [[2, 3], []]" if e["args"] else ""), (e["pid"] << 24) | e["tid"])
                     for e in cpu)
    kernel_names = Counter((ns(e["ts"]), e["name"]) for e in events if e.get("cat") == "kernel")
    return {"device": device, "runtime": runtime, "ranges": ranges, "unlinked": unlinked, "kernel_names": kernel_names}


def loaded(path: Path) -> dict:
    r = KinetoReport(path)
    text = r.strings.lookup
    device = Counter()
    for logical in filter(r.has, TABLES.values()):
        t = r.load(logical, ("start", "end", "deviceId", "streamId", "correlationId", "globalPid"))
        assert (np.diff(t["start"]) >= 0).all()  # rows sorted by start, whatever the event order
        device.update(zip([logical] * t.rows, t["start"].tolist(), t["end"].tolist(), t["deviceId"].tolist(),
                          t["streamId"].tolist(), t["correlationId"].tolist(), t["pid"].tolist()))
    out = {"device": device, "unlinked": r.unlinked, "runtime": Counter(), "ranges": Counter(),
           "kernel_names": Counter()}
    if r.has("kernels"):
        k = r.load("kernels", ("start", "demangledName"))
        out["kernel_names"] = Counter(zip(k["start"].tolist(), text(k["demangledName"])))
        memcpy = r.load("memcpy", ("copyKind", "srcKind", "dstKind"))
        assert set(zip(*(memcpy[c].tolist() for c in memcpy))) <= {(2, 3, 2)}  # DtoH, Device -> Pinned
        rt = r.load("runtime")
        out["runtime"] = Counter(zip(rt["start"].tolist(), rt["end"].tolist(), text(rt["nameId"]),
                                     rt["globalTid"].tolist(), rt["correlationId"].tolist()))
    if r.has("hgtx"):
        h = r.load("hgtx")
        out["ranges"] = Counter(zip(h["start"].tolist(), h["end"].tolist(), text(h["text"]), h["globalTid"].tolist()))
    return out


@settings(max_examples=60, deadline=None)
@given(calls, device_work, ops, st.randoms(use_true_random=False))
def test_loaded_tables_match_brute_force(tmp_path_factory, call_list, work_list, op_list, rnd):
    events = build(call_list, work_list, op_list)
    rnd.shuffle(events)
    path = tmp_path_factory.mktemp("trace") / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    assert loaded(path) == expected(events)
