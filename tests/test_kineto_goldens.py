"""PyTorch-profiler traces against third-party goldens (../shared/corpus/kineto/MANIFEST.md):
TraceLens ``gpu_timeline.csv`` (hggc_ppu_time_breakdown), the TensorBoard plugin's overview
(hgtx_step_sum), HTA's NCCL assertions (PCCL rules); and the cache of parsed traces."""

from __future__ import annotations

import csv
import gzip
import json
import shutil

import pyarrow as pa
import pytest

from asysstats.reading.cache import ColumnCache
from asysstats.reading.kineto import cache as kineto_cache
from asysstats.reading.kineto import parse as kineto_parse
from asysstats.reading.kineto.report import KinetoReport
from asysstats.reading.schema import TABLES

from conftest import CORPUS, fingerprint, run_cli

KINETO = CORPUS / "kineto"
TRACES = sorted(KINETO.glob("*.json.gz")) if KINETO.is_dir() else []
TIMELINES = sorted(KINETO.glob("tracelens_*.golden/gpu_timeline.csv")) if KINETO.is_dir() else []
TYPES = {"total_time": "Total", "busy_time": "Busy", "idle_time": "Idle", "computation_time": "Computation",
         "total_comm_time": "Communication", "exposed_comm_time": "Exposed Communication",
         "total_memcpy_time": "Memcpy", "exposed_memcpy_time": "Exposed Memcpy"}
# resnet_ackpt's golden splits the events by activation recomputation (python_function stacks, which
# the loader does not read): only the rows that do not depend on the split are compared
SPLIT_FREE = {"total_time", "total_comm_time", "total_memcpy_time"}
needs_corpus = pytest.mark.skipif(not TRACES, reason="../shared/corpus/kineto is absent")


def trace(name: str):
    path = KINETO / f"{name}.json.gz"
    if not path.exists():
        pytest.skip(f"{path.name} is absent")
    return path


def json_rows(*args):
    run = run_cli("stats", *map(str, args), "--format", "json")
    assert run.code == 0 and "Traceback" not in run.err, run.err
    return json.loads(run.out)


def breakdown(path, options=""):
    rows = json_rows("-r", f"hggc_ppu_time_breakdown{options}", path)
    return {r["Type"]: r for r in rows if r["Device"] == "All"}


# -- TraceLens gpu_timeline ---------------------------------------------------------------------

@pytest.mark.parametrize("golden", TIMELINES or [pytest.param(None, marks=needs_corpus)],
                         ids=[g.parent.name.removesuffix(".golden") for g in TIMELINES] or None)
def test_time_breakdown_matches_tracelens_gpu_timeline(golden):
    path = trace(golden.parent.name.removesuffix(".golden"))
    got = breakdown(path, ":linked-only")
    rows = [r for r in csv.DictReader(golden.open()) if r.get("is_recompute", "False") == "False"]
    assert len(rows) == len(TYPES)
    for row in rows:
        if "is_recompute" in row and row["type"] not in SPLIT_FREE:
            continue
        ours = got[TYPES[row["type"]]]
        assert abs(ours["Time (ns)"] / 1e6 - float(row["time ms"])) <= 1e-3, row
        assert abs(ours["Time (%)"] - float(row["percent"])) <= 0.05 + 1e-9, row


def test_unlinked_activities_count_by_default():
    # MANIFEST: with the 509 GPU events that ran before the first cpu_op, Qwen-H100's span is 49.65 ms
    got = breakdown(trace("tracelens_h100_qwen"))
    assert abs(got["Total"]["Time (ns)"] / 1e6 - 49.65) < 0.005
    assert breakdown(trace("tracelens_h100_qwen"), ":linked-only")["Total"]["Time (ns)"] < got["Total"]["Time (ns)"]


def test_rccl_kernels_are_communication():
    got = breakdown(trace("tracelens_mi300_resnet_ackpt"))
    assert got["Communication"]["Time (ns)"] > got["Exposed Communication"]["Time (ns)"] > 0


# -- TensorBoard plugin overview ----------------------------------------------------------------

def test_steps_match_the_tensorboard_overview():
    path = trace("kineto_resnet50_w0_v100")
    overview = json.loads((KINETO / "kineto_resnet50_w0_v100.golden" / "result_check_file.txt").open().readline())
    columns = [c["name"] for c in overview["steps"]["columns"] if c["type"] == "number"]
    expected = {f"ProfilerStep#{r[0]}": dict(zip(columns, [v for v in r[1:] if isinstance(v, int)]))
                for r in overview["steps"]["rows"]}
    rows = json_rows("-r", "hgtx_step_sum", path)
    steps = {r["Step"]: r for r in rows[:-1]}
    assert list(steps) == list(expected)
    for name, costs in expected.items():
        got = steps[name]
        assert (got["Kernel (ns)"], got["Memcpy (ns)"], got["Memset (ns)"]) == \
            (costs["Kernel"] * 1000, costs["Memcpy"] * 1000, costs["Memset"] * 1000), name
    average = overview["performance"][0]
    assert average["name"] == "Average Step Time"
    assert rows[-1]["Step"] == "Average" and rows[-1]["Step Time (ns)"] // 1000 == average["value"] == 177592
    # the per-step totals of the tooltips ("Total: 187948us")
    assert [r["Step Time (ns)"] // 1000 for r in rows[:-1]] == [187948, 175153, 179733, 174564, 182172, 165983]


# -- HTA: NCCL collectives ------------------------------------------------------------------------

def test_pccl_rules_on_the_hta_nccl_trace():
    path = trace("hta_nccl_a100_r0")
    summary = json_rows("-r", "pccl_desync_summary", path)
    assert sum(r["Count"] for r in summary) == 21  # HTA: 21 ncclKernel kernels
    assert {r["Kernel Name"].split("_")[1] for r in summary} == {"AllReduce", "Broadcast"}
    kernels = json_rows("-r", "pccl_desync_trace", path)
    assert len(kernels) == 21 and all(r["Desync Rate (%)"] == 0.0 for r in kernels)  # one rank
    longest = max(kernels, key=lambda r: r["Duration (ns)"])
    assert longest["Kernel Name"].startswith("ncclKernel_AllReduce")
    ops = json_rows("-r", "pccl_op_sum", path)
    assert len(ops) == 7 and sum(r["Instances"] for r in ops) == 21
    # HTA: the longest kernel's collective is an allreduce of 2049000 elements in the group [0, 1]
    assert any(r["OP Name"].startswith("AllReduce, p:0, c:2049000, d:7, r:0, w:2,") for r in ops)
    assert all(r["Trans Time (ns)"] > 0 and r["Trans Size (bytes)"] > 0 for r in ops)


SMALL_TRACES = [p for p in TRACES if p.stat().st_size < 1_200_000]


@pytest.mark.parametrize("path", SMALL_TRACES or [pytest.param(None, marks=needs_corpus)],
                         ids=[p.name.removesuffix(".json.gz") for p in SMALL_TRACES] or None)
def test_corpus_smoke(path):
    before = fingerprint(path)
    for rule in ("hggc_ppu_time_breakdown", "hgtx_step_sum", "pccl_op_sum"):
        run = run_cli("stats", "-r", rule, "--format", "csv", path)
        assert "Traceback" not in run.err
        assert run.code == 0 or "does not contain" in run.err, run.err
    assert fingerprint(path) == before


# -- the cache of parsed traces -------------------------------------------------------------------

@pytest.fixture
def small(tmp_path):
    path = tmp_path / "minitoy.pt.trace.json.gz"
    shutil.copyfile(trace("hta_mi250_minitoy"), path)
    return path


def texts(report: KinetoReport) -> dict:
    """Every table the report has, with string ids replaced by their text, for comparison across runs."""
    out = {}
    for logical, spec in TABLES.items():
        if report.has(logical):
            table = report.load(logical)
            for col in spec.columns:
                values = table[col.name]
                text = col.kind in kineto_cache.TEXT_KINDS
                out[logical, col.name] = list(report.strings.lookup(values)) if text else values.astype(str).tolist()
    return out


def count_parses(monkeypatch, fail: bool = False) -> list:
    """Record each parse of a trace (or make any parse fail)."""
    calls: list[int] = []
    events = kineto_parse.TraceStream.events

    def counted(self):
        if fail:
            raise AssertionError("the trace was parsed again")
        calls.append(1)
        yield from events(self)

    monkeypatch.setattr(kineto_parse.TraceStream, "events", counted)
    return calls


def test_second_open_reads_the_cache(small, monkeypatch):
    first = KinetoReport(small)
    count_parses(monkeypatch, fail=True)
    second = KinetoReport(small)
    assert texts(second) == texts(first) and second.metadata == first.metadata
    assert second.unlinked == first.unlinked and second.rank == first.rank
    assert sum(r["Instances"] for r in json_rows("-r", "hggc_ppu_kern_sum", small)) == 14  # the CLI too


def test_strings_are_cached_as_text(small):
    report = KinetoReport(small)
    names = ColumnCache(small).get(f"{kineto_cache.PREFIX}.kernels", "demangledName")
    assert pa.types.is_dictionary(names.type) and pa.types.is_string(names.type.value_type)
    expected = report.strings.lookup(report.load("kernels", ("demangledName",))["demangledName"])
    assert names.to_pylist() == list(expected)


def test_modified_trace_is_parsed_again(small, monkeypatch):
    assert KinetoReport(small).load("kernels", ("start", "end"))["end"].max() > 0
    document = json.loads(gzip.decompress(small.read_bytes()))
    for event in document["traceEvents"]:
        if event.get("cat") == "kernel":
            event["dur"] = 1000.5
    small.write_bytes(gzip.compress(json.dumps(document).encode()))
    calls = count_parses(monkeypatch)
    kernels = KinetoReport(small).load("kernels", ("start", "end"))
    assert calls == [1] and set((kernels["end"] - kernels["start"]).tolist()) == {1000500}


def test_incomplete_entry_is_parsed_again(small, monkeypatch):
    first = texts(KinetoReport(small))
    (ColumnCache(small).folder / f"{kineto_cache.META}.tables.arrow").unlink()
    calls = count_parses(monkeypatch)
    assert texts(KinetoReport(small)) == first and calls == [1]


def test_no_cache_neither_reads_nor_writes(small, monkeypatch):
    marker = ColumnCache(small).folder / f"{kineto_cache.META}.tables.arrow"
    KinetoReport(small, cache=False)
    assert not marker.exists()
    run = run_cli("stats", "--no-cache", "-r", "hggc_ppu_kern_sum", small)
    assert run.code == 0 and not marker.exists(), run.err
    KinetoReport(small)
    calls = count_parses(monkeypatch)
    KinetoReport(small, cache=False)
    assert marker.exists() and calls == [1]
