"""PyTorch profiler (Kineto) traces: hand-built traces with expected tables and CSV, bad
input, and the real corpus against the goldens of TraceLens, the TensorBoard plugin and HTA."""

from __future__ import annotations

import csv
import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest

import asysstats.api.reports
from asysstats.core.errors import AsysError
from asysstats.reading.kineto.report import KinetoReport
from asysstats.reading.opening import open_report
from asysstats.reading.sqlite import SqliteReport

from conftest import CORPUS, fingerprint, run_cli

KINETO_CORPUS = CORPUS / "kineto"
TRACES = sorted(KINETO_CORPUS.glob("*.json.gz")) if KINETO_CORPUS.is_dir() else []
NCCL_NAME = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"
COLLECTIVE = {"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "Group size": 2,
              "dtype": "Float", "Process Group Name": "0", "Process Group Ranks": "[0, 1]"}
MAIN = (100 << 24) | 100


def write_trace(path: Path, events: list[dict], gz: bool = False, after: dict | None = None, **top) -> Path:
    """A trace file: ``top`` members, then traceEvents, then ``after`` members."""
    text = json.dumps({**top, "traceEvents": events, **(after or {})})
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    return path


def x(cat, name, ts, dur, pid=100, tid=100, **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def gpu(cat, name, ts, dur, corr, stream=7, **args) -> dict:
    return x(cat, name, ts, dur, pid=0, tid=stream, device=0, context=1, stream=stream, correlation=corr, **args)


# CPU thread 100 (process 100 "python3"):
#   ProfilerStep#1  1000 |---------------------------------------------------------| 1100
#   aten::mm             1010 |------| 1030        nccl:all_reduce 1040 |-------| 1060
#   cudaLaunchKernel c7    1012 |-| 1014.5         record_param_comms   1041 |-----| 1059
#                                                  cudaLaunchKernel c8   1042.25 |-| 1043.75
#   cudaMemcpyAsync c9                                                        1070 |-| 1071
# GPU 0 stream 7:  orphan c3 990|-|992   gemm c7 1020 |--| 1025.5    memcpy c9 1072 |-| 1074
# GPU 0 stream 20:                                     nccl c8 1050 |---------------| 1080
EVENTS = [
    x("user_annotation", "ProfilerStep#1", 1000, 100),
    x("cpu_op", "aten::mm", 1010, 20, **{"Input Dims": [[4, 8], [8, 2]], "External id": 2}),
    x("cuda_runtime", "cudaLaunchKernel", 1012, 2.5, correlation=7, cbid=211),
    gpu("kernel", "gemm_kernel", 1020, 5.5, 7, grid=[4, 2, 1], block=[128, 1, 1],
        **{"registers per thread": 32, "shared memory": 1024}),
    x("user_annotation", "nccl:all_reduce", 1040, 20),
    x("cpu_op", "record_param_comms", 1041, 18),
    x("cuda_runtime", "cudaLaunchKernel", 1042.25, 1.5, correlation=8),
    gpu("kernel", NCCL_NAME, 1050, 30, 8, stream=20, **COLLECTIVE),
    x("cuda_runtime", "cudaMemcpyAsync", 1070, 1, correlation=9),
    gpu("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 1072, 2, 9, bytes=4096),
    gpu("kernel", "orphan_kernel", 990, 2, 3),
    gpu("gpu_memset", "Memset (Device)", 1075, 1, 10, bytes=64),
    {"ph": "s", "id": 7, "pid": 100, "tid": 100, "ts": 1012, "cat": "ac2g", "name": "ac2g"},
    {"name": "process_name", "ph": "M", "ts": 0, "pid": 100, "tid": 0, "args": {"name": "python3"}},
    {"name": "thread_name", "ph": "M", "ts": 0, "pid": 100, "tid": 100, "args": {"name": "main"}},
    {"ph": "X", "cat": "Trace", "ts": 999, "dur": 200, "pid": "Spans", "tid": "PyTorch Profiler", "name": "PT"},
]
TOP = {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2},
       "deviceProperties": [{"id": 0, "name": "NVIDIA H100", "computeMajor": 9, "computeMinor": 0,
                             "numSms": 132, "totalGlobalMem": 85018279936}]}


@pytest.fixture
def trace(tmp_path):
    return write_trace(tmp_path / "small.pt.trace.json", EVENTS, after={"baseTimeNanoseconds": 1700000000000000000},
                       **TOP)


def texts(report, ids):
    return list(report.strings.lookup(np.asarray(ids)))


def test_kern_sum_csv(trace, capsys):
    before = fingerprint(trace)
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "csv", trace)
    assert run.code == 0, run.err
    assert run.out.splitlines()[1:] == [
        f'1,80.0,30000,1,30000,30000,30000,30000,0,"{NCCL_NAME}",',
        '2,14.7,5500,1,5500,5500,5500,5500,0,"gemm_kernel",',
        '3,5.3,2000,1,2000,2000,2000,2000,0,"orphan_kernel",',
    ]
    assert "2 GPU activities have no launching API call" in run.err  # the orphan kernel and the memset
    assert fingerprint(trace) == before


def test_open_report_dispatches_on_content(trace, writer, tmp_path):
    assert isinstance(open_report(trace), KinetoReport)
    assert isinstance(open_report(write_trace(tmp_path / "t.gz", EVENTS, gz=True)), KinetoReport)
    writer.close()
    assert isinstance(open_report(writer.path), SqliteReport)


def test_device_tables(trace):
    r = KinetoReport(trace)
    k = r.load("kernels")
    assert k["start"].tolist() == [990_000, 1_020_000, 1_050_000]
    assert k["end"].tolist() == [992_000, 1_025_500, 1_080_000]
    assert texts(r, k["demangledName"]) == ["orphan_kernel", "gemm_kernel", NCCL_NAME]
    assert (k["mangledName"] == k["demangledName"]).all() and (k["shortName"] == k["demangledName"]).all()
    assert k["correlationId"].tolist() == [3, 7, 8] and k["streamId"].tolist() == [7, 7, 20]
    assert k["pid"].tolist() == [100, 100, 100] and k["graphNodeId"].tolist() == [-1, -1, -1]
    assert [k[c][1] for c in ("gridX", "gridY", "gridZ", "blockX", "registersPerThread", "staticSharedMemory")] \
        == [4, 2, 1, 128, 32, 1024]
    m = r.load("memcpy")
    assert (m["start"][0], m["end"][0], m["bytes"][0], m["copyKind"][0], m["srcKind"][0], m["dstKind"][0]) \
        == (1_072_000, 1_074_000, 4096, 1, 1, 3)
    s = r.load("memset")
    assert (s["bytes"][0], s["memKind"][0], s["correlationId"][0]) == (64, 3, 10)
    assert r.unlinked == 2


def test_runtime_and_metadata_tables(trace):
    r = KinetoReport(trace)
    rt = r.load("runtime")
    assert rt["start"].tolist() == [1_012_000, 1_042_250, 1_070_000]
    assert rt["end"].tolist() == [1_014_500, 1_043_750, 1_071_000]
    assert rt["correlationId"].tolist() == [7, 8, 9] and (rt["globalTid"] == MAIN).all()
    assert texts(r, rt["nameId"]) == ["cudaLaunchKernel", "cudaLaunchKernel", "cudaMemcpyAsync"]
    dev = r.load("devices")
    assert (dev["id"].tolist(), texts(r, dev["name"]), dev["cuCount"].tolist(), dev["computeMajor"].tolist()) \
        == ([0], ["NVIDIA H100"], [132], [9])
    assert texts(r, r.load("processes")["name"]) == ["python3"]
    threads = r.load("threads")
    assert (threads["globalTid"].tolist(), texts(r, threads["nameId"])) == ([MAIN], ["main"])
    a = r.load("analysis")
    assert (a["startTime"][0], a["stopTime"][0], a["duration"][0]) == (990_000, 1_100_000, 110_000)
    assert r.load("session_start")["utcEpochNs"].tolist() == [1700000000000000000]
    assert (r.rank, r.world_size, r.dialect) == (1, 2, "kineto")


def test_hgtx_ranges_and_nccl_domain(trace):
    r = KinetoReport(trace)
    h = r.load("hgtx")
    rows = sorted(zip(h["start"].tolist(), h["end"].tolist(), h["eventType"].tolist(), h["domainId"].tolist(),
                      texts(r, h["text"])))
    nccl = [row for row in rows if row[3] == 1]
    assert [row for row in rows if row[3] == 0] == [
        (1_000_000, 1_100_000, 59, 0, "ProfilerStep#1"),
        (1_010_000, 1_030_000, 59, 0, "aten::mm, sizes = [[4, 8], [8, 2]]"),
        (1_040_000, 1_060_000, 59, 0, "nccl:all_reduce"),
        (1_041_000, 1_059_000, 59, 0, "record_param_comms"),
    ]
    # the collective's range lies exactly over its launch call; one domain row names the domain
    assert nccl[0] == (1_042_250, -1, 75, 1, "NCCL")
    start, end, kind, _, text = nccl[1]
    assert (start, end, kind) == (1_042_250, 1_043_750, 59)
    assert re.fullmatch(r"AllReduce, p:0, c:1024, d:7, r:1, w:2, h:[0-9a-f]{16}, t:0, b:-", text), text
    assert (h["globalTid"] == MAIN).all() and len(rows) == 6


def test_communicator_hash_is_equal_on_every_rank(tmp_path):
    hashes = []
    for rank in (0, 1):
        path = write_trace(tmp_path / f"r{rank}.json", EVENTS, distributedInfo={"rank": rank, "world_size": 2})
        r = KinetoReport(path)
        h = r.load("hgtx")
        text = texts(r, h["text"][(h["domainId"] == 1) & (h["eventType"] == 59)])[0]
        assert f", r:{rank}, " in text
        hashes.append(re.search(r"h:(\w+)", text).group(1))
    assert hashes[0] == hashes[1]


def test_rounding_once_half_to_even(tmp_path):
    # 1000.0005 us = 1000000.5 ns -> 1000000; dur 0.0015 us = 1.5 ns -> 2: end = start + 2
    # 1000.0015 us = 1000001.5 ns -> 1000002; dur 0.0025 us = 2.5 ns -> 2
    path = write_trace(tmp_path / "r.json", [gpu("kernel", "a", 1000.0005, 0.0015, 1),
                                             gpu("kernel", "b", 1000.0015, 0.0025, 2)])
    k = KinetoReport(path).load("kernels", ("start", "end"))
    assert (k["start"].tolist(), k["end"].tolist()) == ([1_000_000, 1_000_002], [1_000_002, 1_000_004])


def test_2021_schema(tmp_path):
    # string thread ids, lower-case "external id", zero-length GPU events, epoch-microsecond integer times
    t0 = 1623142623531625
    events = [
        {"ph": "X", "cat": "Operator", "name": "aten::conv2d", "pid": 25738, "tid": "25738", "ts": t0 - 50,
         "dur": 100, "args": {"External id": 2, "Input Dims": [[1, 3, 4, 4], [8, 3, 3, 3]]}},
        {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 25738, "tid": "25738", "ts": t0 - 20,
         "dur": 5, "args": {"cbid": 211, "correlation": 5, "external id": 2}},
        {"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "tid": "stream 7", "ts": t0, "dur": 0,
         "args": {"device": 0, "context": 1, "stream": 7, "correlation": 5, "external id": 2}},
        {"ph": "X", "cat": "Memset", "name": "Memset (Device)", "pid": 0, "tid": "stream 7", "ts": t0, "dur": 0,
         "args": {"device": 0, "stream": 7, "correlation": 6, "bytes": 128}},
        {"ph": "i", "s": "t", "name": "[memory]", "pid": 25738, "tid": 25738, "ts": t0, "args": {"Bytes": 4}},
        {"name": "thread_name", "ph": "M", "ts": t0, "pid": 25738, "tid": "25772", "args": {"name": "worker"}},
    ]
    r = KinetoReport(write_trace(tmp_path / "old.json", events, schemaVersion=1))
    k = r.load("kernels")
    assert (k["start"][0], k["end"][0], k["streamId"][0], k["pid"][0]) == (t0 * 1000, t0 * 1000, 7, 25738)
    rt = r.load("runtime")
    assert (rt["pid"][0], rt["tid"][0], rt["correlationId"][0]) == (25738, 25738, 5)
    assert texts(r, r.load("hgtx")["text"]) == ["aten::conv2d, sizes = [[1, 3, 4, 4], [8, 3, 3, 3]]"]
    assert r.load("threads")["tid"].tolist() == [25772]
    assert r.load("session_start")["utcEpochNs"].tolist() == [0]
    assert r.load("memset")["end"].tolist() == [t0 * 1000] and r.unlinked == 1


def test_top_level_array_and_trailing_members(tmp_path):
    path = tmp_path / "array.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps([gpu("kernel", "a", 5, 1, 1)]).encode())  # with a BOM
    assert KinetoReport(path).load("kernels", ("start",))["start"].tolist() == [5000]
    # members after the array, one holding ']' in a string and one a list of objects
    after = {"traceName": "/tmp/x].json", "deviceProperties": [{"id": 3, "name": "G"}], "baseTimeNanoseconds": 42}
    kernel = gpu("kernel", "a", 5, 1, 1)
    kernel["args"]["device"] = 3
    r = KinetoReport(write_trace(tmp_path / "after.json", [kernel], after=after))
    assert r.load("devices")["id"].tolist() == [3] and r.load("session_start")["utcEpochNs"].tolist() == [42]
    assert r.metadata["traceName"] == "/tmp/x].json"


def test_missing_tables_name_the_profiler_option(tmp_path):
    cpu_only = KinetoReport(write_trace(tmp_path / "cpu.json", [x("cpu_op", "aten::add", 1, 2)]))
    assert not cpu_only.has("kernels") and cpu_only.has("hgtx")
    with pytest.raises(AsysError, match=r"cpu.json does not contain .*ProfilerActivity.CUDA"):
        cpu_only.load("kernels")
    gpu_only = KinetoReport(write_trace(tmp_path / "gpu.json", [gpu("kernel", "k", 1, 2, 1)]))
    assert gpu_only.has("kernels") and gpu_only.has("memset") and gpu_only.has("runtime")
    assert gpu_only.load("memset").rows == 0
    assert "ProfilerActivity.CPU], record_shapes=True" in gpu_only.missing_message("hgtx")
    assert "not recorded by the PyTorch profiler" in gpu_only.missing_message("osrt")
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", tmp_path / "cpu.json")
    assert run.code == 2 and "does not contain" in run.err and "Traceback" not in run.err


@pytest.mark.parametrize("content, words", [
    (b'{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1', "unreadable JSON trace"),
    (gzip.compress(b"not json at all", mtime=0), "unreadable JSON trace"),
    (b'{"schemaVersion": 1}', "without a traceEvents array"),
    (b'{"a": [{"b": 1}], "c": 2}', "without a traceEvents array"),
    (b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": "soon", "dur": 1}]}', "trace event 1"),
])
def test_bad_traces_give_one_line(tmp_path, content, words):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", path)
    assert run.code == 2 and run.err.count("\n") == 1 and "Traceback" not in run.err, run.err
    assert "bad.json" in run.err and words in run.err, run.err


# -- the real corpus ---------------------------------------------------------------------
_OPENED: dict[Path, object] = {}


def opened(path: Path):
    """Each corpus trace is parsed once per test session (through the real entry point); the
    runs that share it must not close it."""
    if path not in _OPENED:
        _OPENED[path] = open_report(path)
        _OPENED[path].close = lambda: None
    return _OPENED[path]


def corpus(names=None):
    paths = [p for p in TRACES if names is None or p.name.split(".")[0] in names]
    if not paths:
        return [pytest.param(None, marks=pytest.mark.skip(reason="../shared/corpus/kineto is absent"))]
    return [pytest.param(p, id=p.name.split(".")[0]) for p in paths]


def kern_sum(path, monkeypatch) -> dict[str, tuple[int, int]]:
    monkeypatch.setattr(asysstats.api.reports, "open_report", lambda p, cache=True: opened(Path(p)))
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "json", path)
    assert run.code == 0 and "Traceback" not in run.err, run.err
    return {r["Name"]: (r["Total Time (ns)"], r["Instances"]) for r in json.loads(run.out)}


@pytest.mark.parametrize("path", corpus())
def test_corpus_trace_loads_and_kern_sum_runs(path, monkeypatch):
    before = fingerprint(path)
    report = opened(path)
    for logical in ("kernels", "runtime", "hgtx", "memcpy", "memset", "devices", "threads", "analysis"):
        if report.has(logical):
            report.load(logical)
    assert kern_sum(path, monkeypatch) or not report.load("kernels").rows
    assert fingerprint(path) == before


@pytest.mark.parametrize("path", corpus({"tracelens_h100_bert", "tracelens_h100_qwen", "tracelens_mi210_gpuonly",
                                         "tracelens_mi300_bert", "tracelens_mi300_triton"}))
def test_kernel_totals_equal_tracelens_kernel_summary(path, monkeypatch):
    golden = KINETO_CORPUS / (path.name.split(".")[0] + ".golden") / "kernel_summary.csv"
    expected: dict[str, list] = {}
    with golden.open(encoding="utf-8") as handle:  # one row per (parent op, kernel, stream); durations in us
        for row in csv.DictReader(handle):
            total = expected.setdefault(row["Kernel name"], [0.0, 0])
            total[0] += float(row["Kernel duration (µs)_sum"])
            total[1] += int(row["Kernel duration (µs)_count"])
    assert kern_sum(path, monkeypatch) == {k: (round(us * 1000), n) for k, (us, n) in expected.items()}


@pytest.mark.parametrize("path", corpus({"kineto_resnet50_w0_v100"}))
def test_kernel_totals_equal_tensorboard_plugin(path, monkeypatch):
    golden = KINETO_CORPUS / "kineto_resnet50_w0_v100.golden" / "result_check_file.txt"
    table = json.loads(golden.read_text().splitlines()[3])  # line 4: kernel/table of this run
    assert [c["name"] for c in table["data"]["columns"][:4]] == ["Name", "Tensor Cores Used", "Calls",
                                                                  "Total Duration (us)"]
    expected = {row[0]: (row[3] * 1000, row[2]) for row in table["data"]["rows"]}
    assert len(expected) == 67 and kern_sum(path, monkeypatch) == expected


@pytest.mark.parametrize("path", corpus({"hta_nccl_a100_r0"}))
def test_hta_nccl_collectives(path):
    report = opened(path)
    k = report.load("kernels", ("start", "end", "demangledName", "correlationId"))
    names = texts(report, k["demangledName"])
    nccl = np.flatnonzero([n.startswith("ncclKernel") for n in names])
    assert len(nccl) == 21
    h = report.load("hgtx", ("start", "end", "eventType", "domainId", "text", "globalTid"))
    ranges = np.flatnonzero((h["domainId"] == 1) & (h["eventType"] == 59))
    assert len(ranges) == 21
    calls = report.load("runtime", ("start", "end", "correlationId", "globalTid"))
    longest = nccl[np.argmax((k["end"] - k["start"])[nccl])]
    call = np.flatnonzero(calls["correlationId"] == k["correlationId"][longest])[0]
    at = ranges[(h["start"][ranges] == calls["start"][call]) & (h["globalTid"][ranges] == calls["globalTid"][call])]
    text = texts(report, h["text"][at])[0]
    assert re.fullmatch(r"AllReduce, p:0, c:2049000, d:7, r:0, w:2, h:[0-9a-f]{16}, t:0, b:-", text), text
    ops = {t.split(",")[0] for t in texts(report, h["text"][ranges])}
    assert ops == {"AllReduce", "Broadcast"}


@pytest.mark.parametrize("path", corpus({"hta_sampled_r0"}))
def test_hta_time_range_filter_count(path):
    # HTA TimeRangeFilter((1682725898237042, 1682725898240570)): 93 events with ts >= a and ts + dur <= b
    report = opened(path)
    lo, hi = 1682725898237042 * 1000, 1682725898240570 * 1000
    count = 0
    for logical in ("kernels", "memcpy", "memset", "runtime", "hgtx"):
        t = report.load(logical, ("start", "end", "domainId") if logical == "hgtx" else ("start", "end"))
        inside = (t["start"] >= lo) & (t["end"] <= hi)
        count += int(np.count_nonzero(inside & (t["domainId"] == 0) if logical == "hgtx" else inside))
    assert count == 93


UNLINKED = {"hta_negq_a100_r0": 872, "hta_tdiff_graphs_v100": 614, "tracelens_h100_qwen": 509,
            "tracelens_mi300_resnet_ackpt": 968}  # MANIFEST.md: GPU events whose launch is not in the trace


@pytest.mark.parametrize("path", corpus(set(UNLINKED)))
def test_gpu_work_launched_before_the_window_is_kept_and_counted(path):
    assert opened(path).unlinked == UNLINKED[path.name.split(".")[0]]
