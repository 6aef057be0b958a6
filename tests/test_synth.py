"""The sample generator (``asys sample``), its committed output, and the writer it uses."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from asysstats.analysis.names import demangle
from asysstats.reading.schema import TABLES
from asysstats.reading.sqlite import SqliteReport
from asysstats.synth.generator import write_sample
from asysstats.synth.llm.catalog import BLOCK_STEPS, DEVICES, KERNELS
from asysstats.synth.writer import NULL, ReportWriter

from conftest import fingerprint, run_cli

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sample.asysrep"
DECODE_STEPS = BLOCK_STEPS - 1
# Per device and step: kernels of a decode / prefill step (sampler graph included).
DECODE_KERNELS, PREFILL_KERNELS = 73, 69
# Every logical table the generator writes, with its rows at --scale 1 (4 devices).
ROWS = {
    "kernels": DEVICES * (PREFILL_KERNELS + DECODE_STEPS * DECODE_KERNELS),  # 3488
    "runtime": 4000, "memcpy": 220, "memset": 196, "osrt": 208,
    "pccl_stages": DEVICES * 10 * (10 + DECODE_STEPS),  # 2 channels x 5 stages per ring collective
    "hgtx": 4044, "graph_nodes": DEVICES * 10,  # 5 captured nodes + 5 instantiated clones
    "memory_usage": DEVICES * (8 + 2 + 4),  # start-up, one prefill's workspace alloc/free, shutdown
    "callchains": 108, "processes": DEVICES, "threads": 3 * DEVICES, "devices": DEVICES, "metric_info": 4,
    "analysis": 1, "session_start": 1, "memcpy_kinds": 14, "mem_kinds": 8,
}


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    return write_sample(tmp_path_factory.mktemp("sample") / "sample.asysrep", scale=1, seed=7)


def frame(path: Path, sql: str) -> np.ndarray:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        return np.array(con.execute(sql).fetchall(), dtype=object)


def test_every_table_reads_back_with_its_row_count(sample):
    report = SqliteReport(sample)
    assert report.dialect == "asysrep"
    for table, rows in ROWS.items():
        assert report.load(table).rows == rows, table
    metrics, span = report.load("metrics"), report.load("analysis")["duration"][0]
    samples = np.bincount(metrics["deviceId"]) / 4  # 4 metrics per device and 1 ms sample
    assert ((samples == samples.round()) & (samples >= span // 10**6 - 1) & (samples <= span // 10**6)).all()


def test_scale_multiplies_the_steps(tmp_path):
    report = SqliteReport(write_sample(tmp_path / "s2.asysrep", scale=2, seed=7))
    assert report.load("kernels").rows == 2 * ROWS["kernels"]
    steps = frame(report.path, "SELECT count(*) FROM HGTX_EVENTS WHERE text LIKE '[prof_range]: step %'")
    assert steps[0][0] == DEVICES * 2 * BLOCK_STEPS


def test_same_seed_same_bytes_other_seed_other_times(sample, tmp_path):
    again = write_sample(tmp_path / "again.asysrep", scale=1, seed=7)
    assert again.read_bytes() == sample.read_bytes()
    other = write_sample(tmp_path / "other.asysrep", scale=1, seed=8)
    query = "SELECT start, end, demangledName FROM HGPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid"
    assert frame(other, query).shape == frame(sample, query).shape
    assert not np.array_equal(frame(other, query)[:, 0], frame(sample, query)[:, 0])


def test_sample_refuses_to_overwrite_without_force(tmp_path):
    out = tmp_path / "s.asysrep"
    assert run_cli("sample", out).code == 0
    before = fingerprint(out)
    run = run_cli("sample", out, "--seed", "3")
    assert run.code == 2 and "exists" in run.err and run.err.count("\n") == 1
    assert fingerprint(out) == before
    assert run_cli("sample", out, "--seed", "3", "-f", "true").code == 0
    assert fingerprint(out)[0] != before[0]


def test_kern_sum_on_the_sample(sample):
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "csv", sample)
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    assert len(lines) == 1 + len(KERNELS)
    assert lines[1].endswith('"void deep_gemm::ppu_grouped_gemm_bf16_kernel<128u, 64u, 64u, 128u, 1u, '
                             '(deep_gemm::GemmType)2>(deep_gemm::GroupedParams)",')
    assert sum(int(line.split(",")[3]) for line in lines[1:]) == ROWS["kernels"]


def test_device_work_follows_its_launching_call(sample):
    for table in ("KERNEL", "MEMCPY", "MEMSET"):
        rows = frame(sample, f"""SELECT a.start, a.end, r.start, r.end FROM HGPTI_ACTIVITY_KIND_{table} a
            LEFT JOIN HGPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = a.correlationId
            AND (r.globalTid >> 24) = (a.globalPid >> 24)""")
        assert all(v is not None for v in rows[:, 2]), table
        start, end, call_start, call_end = rows.astype(np.int64).T
        assert (start >= call_start).all() and (end > start).all()
        if table == "KERNEL":  # sometimes a kernel starts before its launch call returns
            assert 0 < np.mean(start < call_end) < 0.2


def test_a_stream_runs_one_thing_at_a_time(sample):
    rows = frame(sample, """SELECT deviceId, streamId, start, end FROM (
        SELECT deviceId, streamId, start, end FROM HGPTI_ACTIVITY_KIND_KERNEL UNION ALL
        SELECT deviceId, streamId, start, end FROM HGPTI_ACTIVITY_KIND_MEMCPY UNION ALL
        SELECT deviceId, streamId, start, end FROM HGPTI_ACTIVITY_KIND_MEMSET) ORDER BY deviceId, streamId, start""")
    device, stream, start, end = rows.astype(np.int64).T
    same = (device[1:] == device[:-1]) & (stream[1:] == stream[:-1])
    assert (start[1:][same] >= end[:-1][same]).all()


def test_push_pop_ranges_nest_per_thread(sample):
    rows = frame(sample, "SELECT globalTid, start, end FROM HGTX_EVENTS WHERE eventType = 59 "
                         "ORDER BY globalTid, start, end DESC").astype(np.int64)
    for tid in np.unique(rows[:, 0]):
        open_ends: list[int] = []
        for start, end in rows[rows[:, 0] == tid, 1:]:
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            assert not open_ends or end <= open_ends[-1]
            open_ends.append(end)


def test_annotation_forms(sample):
    kinds = dict(frame(sample, "SELECT eventType, count(*) FROM HGTX_EVENTS GROUP BY eventType").tolist())
    # per device: marks at start-up, shutdown and for the batch; ranges load_weights and request batch 0;
    # 5 domains; the rest push/pop
    assert kinds == {34: 3 * DEVICES, 59: ROWS["hgtx"] - 10 * DEVICES, 60: 2 * DEVICES, 75: 5 * DEVICES}
    domains = frame(sample, "SELECT DISTINCT text, domainId FROM HGTX_EVENTS WHERE eventType = 75 ORDER BY domainId")
    assert domains.tolist() == [["acblas", 1], ["deepgemm", 2], ["fmha", 3], ["moe", 4], ["NCCL", 5]]
    cross = frame(sample, "SELECT count(*) FROM HGTX_EVENTS WHERE eventType = 60 AND endGlobalTid != globalTid")
    assert cross[0][0] == DEVICES  # the request batch starts on the scheduler thread and ends on the main thread
    texts = frame(sample, "SELECT coalesce(h.text, s.value) FROM HGTX_EVENTS h "
                          "LEFT JOIN StringIds s ON s.id = h.textId WHERE h.eventType = 59")[:, 0].tolist()
    assert "[prof_range]: step 11" in texts
    assert any(t.startswith("aten::mm, seq = ") and ", sizes = [[8, 2048], [2048, 1536]], input_op_ids = [(" in t
               for t in texts)
    assert "AllReduce, p:0, c:16384, d:9, r:2, w:4, h:9da3d23b9ccef54c, t:1, b:0x301a000000/0x302d000000" in texts
    assert any(t.startswith("[MoE] --format=M_8_E_128_H_2048_In_768_topk_8_topkids[") for t in texts)
    assert "D_MoE,M_8_E_128_H_2048_In_768_topk_8" in texts


def test_graph_kernels_map_to_nodes_captured_in_a_range(sample):
    rows = frame(sample, """SELECT k.graphId, count(*), min(h.start <= o.start AND o.end <= h.end)
        FROM HGPTI_ACTIVITY_KIND_KERNEL k
        JOIN HGGC_GRAPH_NODE_EVENTS c ON c.graphNodeId = k.graphNodeId AND c.globalTid >> 24 = k.globalPid >> 24
        JOIN HGGC_GRAPH_NODE_EVENTS o ON o.graphNodeId = c.originalGraphNodeId AND o.globalTid = c.globalTid
        JOIN HGTX_EVENTS h ON h.globalTid = o.globalTid AND h.textId = (SELECT id FROM StringIds
            WHERE value = '[prof_range]: capture sampler graph') GROUP BY k.graphId""")
    assert rows.tolist() == [[2, 4 * DEVICES * BLOCK_STEPS, 1]]


def test_memory_releases_match_allocations(sample):
    rows = frame(sample, "SELECT m.globalPid, m.address, m.memoryOperationType, r.callchainId "
                         "FROM HGGC_PPU_MEMORY_USAGE_EVENTS m JOIN HGPTI_ACTIVITY_KIND_RUNTIME r "
                         "ON r.correlationId = m.correlationId AND r.globalTid = m.globalTid ORDER BY m.start")
    assert len(rows) == ROWS["memory_usage"] and all(c is not None for c in rows[:, 3])
    live: dict[tuple[int, int], int] = {}
    for pid, address, operation, _ in rows.tolist():
        if operation == 0:
            assert (pid, address) not in live
            live[(pid, address)] = 1
        else:
            del live[(pid, address)]
    assert len(live) == 2 * DEVICES  # weights and KV cache are never released


def test_cpp_kernel_names_are_real_manglings():
    for kernel in KERNELS.values():
        if kernel.name.startswith("_Z"):
            assert demangle(kernel.name) != kernel.name and kernel.short in kernel.demangled


def test_committed_sample_matches_the_generator(sample):
    assert EXAMPLE.stat().st_size < 2 * 2**20
    committed, fresh = SqliteReport(EXAMPLE), SqliteReport(sample)
    for table in ("kernels", "runtime", "hgtx"):
        a, b = committed.load(table, ("start", "end")), fresh.load(table, ("start", "end"))
        assert a.rows == b.rows and np.array_equal(a["start"], b["start"]), table


def test_writer_nulls_and_broadcast(tmp_path):
    writer = ReportWriter(tmp_path / "w.asysrep")
    writer.add("kernels", start=np.array([1, 2]), end=np.array([3, 4]), deviceId=0,
               graphNodeId=np.array([NULL, 7]), correlationId=np.int64(5))
    writer.add("devices", id=np.array([0]), peakFlopsBf16=np.array([np.nan]), name="PPU")
    writer.close()
    assert frame(writer.path, "SELECT deviceId, graphNodeId, correlationId FROM HGPTI_ACTIVITY_KIND_KERNEL").tolist() \
        == [[0, None, 5], [0, 7, 5]]
    assert frame(writer.path, "SELECT name, peakFlopsBf16 FROM TARGET_INFO_PPU").tolist() == [["PPU", None]]
    assert set(TABLES) >= set(ROWS)
