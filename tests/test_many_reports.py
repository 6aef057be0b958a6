"""Many reports at once (``--merge-reports``): every mergeable rule over 8 rank reports on a
two-worker Dask cluster equals the rule over one report that concatenates them; hosts,
clocks (``--ts-normalize``, ``--ts-shift``), bad reports, report arguments, the corpus."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asysstats.analysis.inputs import Inputs, Settings
from asysstats.api.merging.hosts import MERGEABLE, PID_COLUMNS, run_merged, with_hosts
from asysstats.api.merging.reduce import FOLDED
from asysstats.api.running import run_rule
from asysstats.core.result import Result
from asysstats.reading.merged.cluster import DaskExecutor, InlineExecutor
from asysstats.reading.merged.identity import JobIds, Placement, place
from asysstats.reading.merged.report import open_merged
from asysstats.reading.schema import ASYSREP, TABLES
from asysstats.reading.sqlite import SqliteReport
from asysstats.rulebook import REGISTRY, RULE_MODULES
from asysstats.synth.llm.sample import build
from asysstats.synth.writer import ENUMS, NULL, ReportWriter
from asysstats.writing.writers import render

from conftest import corpus_params, fingerprint, run_cli

distributed = pytest.importorskip("dask.distributed")

RANKS = 8
UTC = 1_767_225_600_000_000_000
TIMES = ("start", "end", "startTime", "stopTime")
THREADS = ("globalTid", "globalPid", "endGlobalTid")
LOCAL_IDS = {("runtime", "callchainId"), ("osrt", "callchainId"), ("callchains", "id"),
             ("metrics", "metricId"), ("metric_info", "metricId")}


def moved(values, by: int):
    """Timestamps moved by ``by`` (missing, negative cells stay)."""
    if isinstance(values, (int, np.integer)):
        return values + by if values >= 0 else values
    values = np.asarray(values)
    return np.where(values >= 0, values + by, values) if values.dtype.kind == "i" else values


class RankWriter(ReportWriter):
    """A rank's report on its own clock: every timestamp moved by ``clock``, session start ``utc``."""

    def __init__(self, path: Path, clock: int, utc: int) -> None:
        super().__init__(path)
        self.clock, self.utc = clock, utc

    def add(self, table: str, **columns) -> None:
        if table == "session_start":
            columns["utcEpochNs"] = self.utc
        for name in set(TIMES) & columns.keys():
            columns[name] = moved(columns[name], self.clock)
        super().add(table, **columns)


def concat_pid(k: int, pid: np.ndarray) -> np.ndarray:
    """The concatenated report's pid of report ``k``'s ``pid`` (pids below 2**16 here)."""
    return (k << 16) | pid


def merged_pid(concat: np.ndarray) -> np.ndarray:
    """The concatenated report's pid in asysstats' merged numbering (``k << 24 | pid``)."""
    concat = np.asarray(concat, np.int64)
    return np.where(concat >= 0, ((concat >> 16) << 24) | (concat & 0xFFFF), concat)


def concatenate(paths: list[Path], out: Path, shifts: list[int]) -> Path:
    """One report holding every event of ``paths``: times shifted, devices numbered job-wide
    (``offset + id``), processes ``k << 16 | pid``, per-report ids ``k << 32 | id``."""
    reports = [SqliteReport(p, cache=False) for p in paths]
    spans = [int(r.load("devices", ("id",))["id"].max()) + 1 for r in reports]
    offsets = np.cumsum([0] + spans[:-1])
    w = ReportWriter(out)
    for name, spec in TABLES.items():
        present = [(k, r, r.load(name)) for k, r in enumerate(reports) if r.has(name)]
        if not present or name in ENUMS:  # the writer writes the enumerations itself
            continue
        if name == "analysis":
            lo = min(int(t["startTime"][0]) + shifts[k] for k, _, t in present)
            hi = max(int(t["stopTime"][0]) + shifts[k] for k, _, t in present)
            w.add(name, startTime=lo, stopTime=hi, duration=hi - lo)
        elif name == "session_start":
            w.add(name, utcEpochNs=min(int(t["utcEpochNs"][0]) for _, _, t in present))
        else:
            for k, r, t in present:
                w.add(name, **{c.name: job_column(w, r, name, c, t[c.name], k, offsets[k], shifts[k])
                               for c in spec.columns})
    w.close()
    for r in reports:
        r.close()
    return out


def job_column(w: ReportWriter, report: SqliteReport, table: str, col, values: np.ndarray, k: int, offset: int,
               shift: int) -> np.ndarray:
    if col.kind == "text":
        return report.strings.lookup(values)
    if col.kind == "strid":
        uniq, inverse = np.unique(values, return_inverse=True)
        ids = np.array([NULL if t is None else w.string(t) for t in report.strings.lookup(uniq)], np.int64)
        return ids[inverse.reshape(-1)]
    if values.dtype.kind != "i":
        return values
    present = values >= 0
    if col.name in TIMES:
        return np.where(present, values + shift, values)
    if col.name == "deviceId" or (table == "devices" and col.name == "id"):
        return np.where(present, values + offset, values)
    if col.name == "pid":
        return np.where(present, concat_pid(k, values), values)
    if col.name in THREADS:
        pid, tid = (values >> 24) & 0xFFFFFF, values & 0xFFFFFF
        return np.where(present, (values >> 48) << 48 | concat_pid(k, pid) << 24 | tid, values)
    if (table, col.name) in LOCAL_IDS:
        return np.where(present, (k << 32) | values, values)
    return values


# -- the 8 rank reports, their concatenation, a two-worker cluster ---------------------------
@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                   dashboard_address="127.0.0.1:0") as c:
        yield c


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> list[Path]:
    """8 sample reports (seed = rank), each on its own clock, 1 µs of UTC skew per rank."""
    folder = tmp_path_factory.mktemp("job")
    paths = []
    for k in range(RANKS):
        writer = RankWriter(folder / f"job_node_h{k}.sqlite", clock=k * 7_000_000_000, utc=UTC + k * 1000)
        build(writer, 1, k)
        writer.close()
        paths.append(writer.path)
    return paths


def utc_shifts(paths: list[Path]) -> list[int]:
    """--ts-normalize by hand: session start (UTC) minus the analysis start, per report."""
    out = []
    for path in paths:
        report = SqliteReport(path, cache=False)
        out.append(int(report.load("session_start")["utcEpochNs"][0]) - int(report.load("analysis")["startTime"][0]))
        report.close()
    return out


@pytest.fixture(scope="module")
def concat(ranks, tmp_path_factory) -> SqliteReport:
    return SqliteReport(concatenate(ranks, tmp_path_factory.mktemp("concat") / "job.sqlite", utc_shifts(ranks)))


@pytest.fixture(scope="module")
def merged(ranks, cluster):
    report = open_merged([str(p) for p in ranks], DaskExecutor(cluster.scheduler_address), normalize=True)
    yield report
    report.close()


def expected_from(raw: Result, merged) -> Result:
    """The concatenated report's result as the merged run prints it: pids in the merged
    numbering, then local ids and the Host column."""
    frame = {name: merged_pid(v) if name in PID_COLUMNS else v for name, v in raw.frame.items()}
    return with_hosts(Result(raw.name, raw.title, raw.share, raw.columns, frame, raw.strings,
                             numbered=raw.numbered, mirrors=raw.mirrors), merged)


CASES = [(name, {}) for name in MERGEABLE] + [
    ("hggc_ppu_kern_sum", {"hgtx-name": None}), ("hggc_ppu_kern_sum", {"base": None, "device": "0/3"}),
    ("pccl_desync_trace", {"device": "1/2"}), ("pccl_desync_summary", {"hgtx-name": None}),
    ("pccl_op_sum", {"device": "0/1"}), ("ppu_time_util", {"merge-process-id": None, "range-mode": "full"}),
    ("ppu_gaps", {"gap": "1"}), ("hgtx_kern_sum", {"device": "0/2"}), ("osrt_sum", {"rows": "3"}),
]


@pytest.mark.parametrize("name,given", CASES, ids=[f"{n}{''.join(':' + k for k in g)}" for n, g in CASES])
def test_merged_equals_concatenated(name, given, merged, concat):
    rule = next(r for r in REGISTRY if r.name == name)
    options = rule.parse_options(given)
    returned = merged.returned
    got = run_merged(rule, options, Inputs(merged))
    assert (merged.returned > returned) == (rule.summary is not None)  # summaries take the reduced path
    if getattr(options, "device", None) is not None:  # the concatenated report numbers devices job-wide
        spans = [m.at.device_span for m in merged.members]
        options = replace(options, device=tuple(o + d for o, s in zip(np.cumsum([0] + spans[:-1]), spans)
                                                for d in options.device if d < s))
    expected = expected_from(run_rule(rule, options, Inputs(concat)), merged)
    assert got.rows > 0 or name == "ppu_gaps"
    assert render(got, "csv") == render(expected, "csv")


REDUCED = [r.name for r in REGISTRY if r.summary is not None]
# The reduced rules whose tables asysrep holds (the merged fixtures are asysrep; OpenACC and OpenMP
# are Nsight-only tables, and their rules say so on asysrep).
REDUCED_ON_ASYSREP = [name for name in REDUCED
                      if all(TABLES[table].physical[ASYSREP] for table in REGISTRY.get(name).required_tables)]
WINDOWS = {"filter-time": Settings(filter_time=(5_000_000, 30_000_000)),
           "filter-hgtx": Settings(filter_hgtx="D_MoE,M_8_E_128_H_2048_In_768_topk_8@moe/40"),
           "keep-suspect": Settings(keep_suspect_events=True),
           "kernel-groups": Settings(kernel_groups=(("gemm", "gemm"), ("collective", "pccl|AllReduce"),
                                                    ("none", "no such kernel")))}


def test_the_summary_rules_reduce():
    reduced = MERGEABLE[:7] + ("hggc_ppu_kern_category_sum",) + RULE_MODULES["nsys_stats"] + (
        "openacc_sum", "openmp_sum", "cuda_api_gpu_sum")
    assert sorted(REDUCED) == sorted(reduced) and all(r.compute == r.summary.compute
                                                            for r in REGISTRY if r.summary)
    assert sorted(set(REDUCED) - set(REDUCED_ON_ASYSREP)) == ["openacc_sum", "openmp_sum"]


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("name", REDUCED_ON_ASYSREP)
def test_reduced_rules_take_the_merged_windows(name, window, merged, concat):
    """Each report's rows are taken with the merged set's analysis range, windows and settings."""
    rule = REGISTRY.get(name)
    options = rule.parse_options({})
    got = run_merged(rule, options, Inputs(merged, WINDOWS[window]))
    expected = expected_from(run_rule(rule, options, Inputs(concat, WINDOWS[window])), merged)
    assert render(got, "csv") == render(expected, "csv")
    if name in ("hggc_ppu_kern_sum", "hgtx_sum") and window.startswith("filter"):
        whole = run_rule(rule, options, Inputs(concat))
        assert 0 < got.frame["Instances"].sum() < whole.frame["Instances"].sum()


def test_only_reduced_results_travel(ranks, cluster):
    """A summary brings back per-group partials and medians, never the events' columns."""
    report = open_merged([str(p) for p in ranks], DaskExecutor(cluster.scheduler_address), normalize=True)
    try:
        rule = REGISTRY.get("hggc_ppu_kern_sum")
        result = run_merged(rule, rule.parse_options({}), Inputs(report))
        assert {table for table, _ in report._tables} <= set(FOLDED)  # no event table came here
        names = sum(len(t) for t in result.strings.lookup(result.frame["Name"]))
        per_group = (RANKS + 1) * (names + result.rows * 8 * 8)  # a key and 6 partials per report, medians
        kernels = sum(SqliteReport(p, cache=False).load("kernels", ("start",)).rows for p in ranks)
        assert 0 < report.returned <= per_group < kernels * 16  # what start and end of every kernel take
    finally:
        report.close()


def test_cli_directory_on_the_cluster(ranks, cluster, concat, merged):
    before = [fingerprint(p) for p in ranks]
    run = run_cli("stats", "-r", "pccl_desync_summary", "--merge-reports", "--ts-normalize", "true",
                  "--scheduler", cluster.scheduler_address, "--format", "csv", ranks[0].parent)
    assert run.code == 0, run.err
    rule = REGISTRY.get("pccl_desync_summary")
    assert run.out == render(run_rule(rule, rule.parse_options({}), Inputs(concat)), "csv")
    assert [fingerprint(p) for p in ranks] == before


def test_hosts_listed_per_process_and_device(merged):
    rule = REGISTRY.get("pccl_stage_sum")
    result = run_merged(rule, rule.parse_options({}), Inputs(merged))
    assert [c.name for c in result.columns][:3] == ["Host", "PID", "Device ID"]
    hosts = set(result.strings.lookup(result.frame["Host"]))
    assert hosts == {f"h{k}" for k in range(RANKS)}
    assert set(result.frame["PID"]) == {31000, 31001, 31002, 31003}  # every rank reuses the same pids
    assert set(result.frame["Device ID"]) == {0, 1, 2, 3}
    keys = zip(result.strings.lookup(result.frame["Host"]), result.frame["PID"], result.frame["Device ID"],
               result.frame["TID"], result.frame["Channel ID"], result.strings.lookup(result.frame["Channel Type"]),
               result.strings.lookup(result.frame["Name"]))
    assert len(set(keys)) == result.rows  # hosts keep rows with the same local ids apart


# -- hand-checked goldens: two nodes, the same pid and devices, clocks 4000 ns apart ---------
#   node a: analysis starts at 1000, UTC start U;      node b: analysis starts at 5000, UTC U + 50
#   AllReduce (pid 100)   raw               normalized (U + ...)   shifted by --ts-shift 0,-3950
#     a dev0  [1100,1200) corr 1            [100,200)              [1100,1200)
#     a dev1  [1110,1200) corr 2            [110,200)              [1110,1200)
#     b dev0  [5060,5160) corr 1            [110,210)              [1110,1210)
#     b dev1  [5080,5170) corr 2            [130,220)              [1130,1220)
#   aligned: one communication from 100 to 220 (120 ns), all four run in [130,200): overlap 70,
#   desync (120 - 70) / 120 = 41.7 %; the last to start is b's device 1.
#   Stages (pid 100, tid 7, device 1, channel 0, RX "Transmit"): a [1100,1150), b [5000,5030).
U = 1_700_000_000_000_000_000
ALLREDUCE = "pcclKernel_AllReduce_RING_LL_Sum_bf16(pcclDevWorkColl)"
DESYNC = ("Row#,Start (ns),Duration (ns),Overlap (ns),Desync Rate (%),Last Host,Last Process,Last Device,"
          "Last Kernel,Max Duration (ns),Min Duration (ns),Avg Duration (ns),Instances,Kernel Name,")


def node(path: Path, start: int, utc: int, kernels: list[tuple[int, int, int, int]], stage: tuple[int, int]) -> Path:
    w = ReportWriter(path)
    dev, s, e, corr = (list(c) for c in zip(*kernels))
    w.add("kernels", start=s, end=e, deviceId=dev, correlationId=corr, globalPid=100 << 24,
          demangledName=w.string(ALLREDUCE), shortName=w.string(ALLREDUCE))
    w.add("devices", id=[0, 1], name="PPU-ZW810E")
    w.add("pccl_stages", start=stage[0], end=stage[1], globalTid=(100 << 24) | 7, deviceId=1, channelId=0,
          channelType="RX", stageNameId=w.string("Transmit"))
    w.add("analysis", startTime=start, stopTime=start + 10_000, duration=10_000)
    w.add("session_start", utcEpochNs=utc)
    w.close()
    return path


@pytest.fixture
def nodes(tmp_path) -> list[Path]:
    return [node(tmp_path / "train_node_a.sqlite", 1000, U, [(0, 1100, 1200, 1), (1, 1110, 1200, 2)], (1100, 1150)),
            node(tmp_path / "train_node_b.sqlite", 5000, U + 50, [(0, 5060, 5160, 1), (1, 5080, 5170, 2)],
                 (5000, 5030))]


def merged_csv(cluster, *args) -> list[str]:
    run = run_cli("stats", "--merge-reports", "--scheduler", cluster.scheduler_address, "--format", "csv", *args)
    assert run.code == 0, run.err
    return run.out.splitlines()


def test_golden_normalized_clocks(nodes, cluster):
    assert merged_csv(cluster, "-r", "pccl_desync_trace", "--ts-normalize", "true", *nodes) == [
        DESYNC, f'1,{U + 100},120,70,41.7,"b",100,1,2,100,90,95,4,"{ALLREDUCE}",']


def test_golden_manual_shift(nodes, cluster):
    assert merged_csv(cluster, "-r", "pccl_desync_trace", "--ts-shift", "0", "--ts-shift=-3950", *nodes)[1:] == [
        f'1,1100,120,70,41.7,"b",100,1,2,100,90,95,4,"{ALLREDUCE}",']


def test_golden_clocks_not_aligned(nodes, cluster):
    # without alignment the two nodes' kernels never overlap: one communication per node,
    # a [1100,1200): overlap 1200 - 1110 = 90, desync 10 %; b [5060,5170): 80 of 110, 27.3 %
    assert merged_csv(cluster, "-r", "pccl_desync_trace", *nodes)[1:] == [
        f'1,5060,110,80,27.3,"b",100,1,2,100,90,95,2,"{ALLREDUCE}",',
        f'2,1100,100,90,10.0,"a",100,1,2,100,90,95,2,"{ALLREDUCE}",']


def test_golden_device_option_selects_on_every_host(nodes, cluster):
    # device 0 of a [100,200) and of b [110,210): 110 ns, overlap 90, desync 18.2 %
    assert merged_csv(cluster, "-r", "pccl_desync_trace:device=0", "--ts-normalize", "true", *nodes)[1:] == [
        f'1,{U + 100},110,90,18.2,"b",100,0,1,100,100,100,2,"{ALLREDUCE}",']


def test_golden_summary_and_stage_hosts(nodes, cluster):
    out = merged_csv(cluster, "-r", "hggc_ppu_kern_sum,pccl_stage_sum", *nodes)
    assert out[:2] == ["Row#,Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name,",
                       f'1,100.0,380,4,95,95,90,100,5,"{ALLREDUCE}",']
    assert out[2:] == [
        "Row#,Host,PID,Device ID,TID,Channel ID,Channel Type,Name,Total Time,Instances,Avg,Med,Min,Max,Stdev,",
        '1,"a",100,1,7,0,"RX","Transmit",50,1,50,50,50,50,0,',
        '2,"b",100,1,7,0,"RX","Transmit",30,1,30,30,30,30,0,']


def ranged_node(path: Path, ranges: list[tuple[int, int, int, str]], kernel: tuple[int, int]) -> Path:
    """A report with HGTX ranges (start, end or NULL, event type, name) and one kernel."""
    w = ReportWriter(path)
    start, end, kind, text = (list(c) for c in zip(*ranges))
    w.add("hgtx", start=start, end=end, eventType=kind, text=text, globalTid=(100 << 24) | 7, domainId=0)
    w.add("kernels", start=kernel[0], end=kernel[1], deviceId=0, correlationId=0, globalPid=100 << 24,
          demangledName=w.string("gemm"), shortName=w.string("gemm"))
    w.add("devices", id=[0])
    w.close()
    return path


def test_golden_open_ranges_end_at_the_last_hgtx_time_of_the_set(tmp_path, cluster):
    # node a: push/pop "step" [100,200), start/end "load" from 150 without an end, a kernel
    #   ending before it starts (left out); node b: "step" [1000,1400), the same kind of kernel.
    # Merged, "load" lasts until 1400, the last HGTX timestamp of the set: 1250 ns.
    a = ranged_node(tmp_path / "run_node_a.sqlite", [(100, 200, 59, "step"), (150, NULL, 60, "load")], (300, 250))
    b = ranged_node(tmp_path / "run_node_b.sqlite", [(1000, 1400, 59, "step")], (500, 400))
    run = run_cli("stats", "-r", "hgtx_sum", "--merge-reports", "--scheduler", cluster.scheduler_address,
                  "--format", "csv", a, b)
    assert run.code == 0, run.err
    assert run.out.splitlines()[1:] == ['1,71.4,1250,1,1250,1250,1250,1250,0,"StartEnd","load",',
                                        '2,28.6,500,2,250,250,100,400,150,"PushPop","step",']
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--merge-reports", "--scheduler", cluster.scheduler_address,
                  a, b)
    assert run.code == 0 and "note: run_merged.sqlite: 2 kernels rows with end < start excluded" in run.err


def test_a_report_without_analysis_range_takes_the_sets(nodes, tmp_path, cluster):
    """Node b states no analysis range: its kernel of 29500 ns is longer than the set's
    capture (10000 ns) and left out, as it is from the gathered merged report."""
    b = ranged_node(tmp_path / "train_node_b.sqlite", [(1000, 1400, 59, "step")], (500, 30_000))
    report = open_merged([str(nodes[0]), str(b)], DaskExecutor(cluster.scheduler_address))
    try:
        rule = REGISTRY.get("hggc_ppu_kern_sum")
        reduced, gathered = Inputs(report), Inputs(report)
        got = run_merged(rule, rule.parse_options({}), reduced)
        assert render(got, "csv") == render(run_rule(rule, rule.parse_options({}), gathered), "csv")
        assert got.frame["Instances"].tolist() == [2] and reduced.notes == gathered.notes
        assert reduced.notes == ["train_merged.sqlite: 1 kernels rows longer than the capture (10000 ns) excluded "
                                 "(use --keep-suspect-events to keep them)"]
    finally:
        report.close()


def test_single_report_ts_normalize_without_merge(nodes):
    run = run_cli("stats", "-r", "pccl_desync_trace", "--ts-normalize", "true", "--format", "csv", nodes[1])
    assert run.code == 0, run.err
    assert run.out.splitlines()[1].startswith(f"1,{U + 110},110,80,27.3,100,1,2,")  # no Host column


# -- bad reports -----------------------------------------------------------------------------
@pytest.fixture
def with_bad(nodes, tmp_path) -> list[Path]:
    bad = tmp_path / "train_node_c.sqlite"
    bad.write_bytes(b"not a database at all")
    return [nodes[0], bad, nodes[1]]


def test_bad_report_stops_the_run(with_bad, cluster):
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--merge-reports", "--scheduler", cluster.scheduler_address,
                  *with_bad)
    assert run.code == 2 and run.out == ""
    assert run.err.count("\n") == 1 and "train_node_c.sqlite" in run.err and "Traceback" not in run.err


def test_skip_bad_reports(with_bad, cluster, tmp_path):
    missing = tmp_path / "train_node_d.sqlite"
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--merge-reports", "--skip-bad-reports", "--format", "csv",
                  "--scheduler", cluster.scheduler_address, *with_bad, missing)
    assert run.code == 0, run.err
    skipped = run.err.splitlines()
    assert len(skipped) == 2 and "train_node_c.sqlite" in skipped[0] and "train_node_d.sqlite" in skipped[1]
    assert all(line.startswith("skipped: ") for line in skipped)
    assert run.out.splitlines()[1] == f'1,100.0,380,4,95,95,90,100,5,"{ALLREDUCE}",'


def test_skip_bad_reports_without_merge(with_bad):
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--skip-bad-reports", "--format", "csv", *with_bad)
    assert run.code == 0 and "skipped: " in run.err and "train_node_c.sqlite" in run.err
    assert run.out.count("Row#") == 2


def test_all_bad(tmp_path, cluster):
    bad = tmp_path / "x.sqlite"
    bad.write_bytes(b"junk")
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--merge-reports", "--skip-bad-reports",
                  "--scheduler", cluster.scheduler_address, bad)
    assert run.code == 2 and "none of the 1 reports could be read" in run.err


def test_bad_table_while_loading_names_the_report(nodes, tmp_path, cluster):
    import sqlite3

    broken = tmp_path / "train_node_z.sqlite"
    broken.write_bytes(nodes[0].read_bytes())
    con = sqlite3.connect(broken)
    con.execute("UPDATE HGPTI_ACTIVITY_KIND_KERNEL SET start = 'soon'")
    con.commit()
    con.close()
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--merge-reports", "--no-cache",
                  "--scheduler", cluster.scheduler_address, nodes[1], broken)
    assert run.code == 2 and run.out == "" and "train_node_z.sqlite" in run.err and run.err.count("\n") == 1


# -- options, arguments, installation --------------------------------------------------------
def test_rules_that_do_not_merge(nodes):
    run = run_cli("stats", "-r", "hggc_api_trace", "--merge-reports", *nodes)
    assert run.code == 2 and "does not support --merge-reports" in run.err


def test_scheduler_needs_merge(nodes):
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--scheduler", "tcp://127.0.0.1:1", *nodes)
    assert run.code == 2 and "needs --merge-reports" in run.err


def test_missing_dask_says_how_to_install(nodes, monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--merge-reports", *nodes)
    assert run.code == 2 and 'pip install "asysstats[dask]"' in run.err


def test_glob_and_empty_directory(nodes, tmp_path):
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "csv", str(tmp_path / "train_node_*.sqlite"))
    assert run.code == 0 and run.out.count("Row#") == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "is a directory" in run_cli("stats", empty).err
    assert "no report matches" in run_cli("stats", str(tmp_path / "nothing_*.sqlite")).err


def test_one_output_file_per_report(nodes, tmp_path):
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "csv", "-o", tmp_path / "out", *nodes)
    assert run.code == 0, run.err
    assert sorted(p.name for p in tmp_path.glob("out_*.csv")) == [
        "out_train_node_a_hggc_ppu_kern_sum.csv", "out_train_node_b_hggc_ppu_kern_sum.csv"]


# -- properties ------------------------------------------------------------------------------
@given(index=st.integers(0, 255), count=st.integers(2, 256), pid=st.integers(0, (1 << 24) - 1),
       tid=st.integers(0, (1 << 24) - 1), hw=st.integers(0, 3), device=st.integers(0, 15), offset=st.integers(1, 999))
@settings(max_examples=60, deadline=None)
def test_identities_round_trip(index, count, pid, tid, hw, device, offset):
    """Placed ids decode to (report, local id); threads keep pid and tid in their low bits."""
    index = index % count
    at = Placement(index, count, offset, 16, 0)
    got_index, got_pid = JobIds.pids(place("kernels", "pid", np.array([pid, NULL]), at, "r"))
    assert (got_index.tolist(), got_pid.tolist()) == ([index, -1], [pid, NULL])
    folded = place("runtime", "globalTid", np.array([(hw << 48) | (pid << 24) | tid, -1]), at, "r")
    assert folded[1] == -1 and ((folded[0] >> 24) & 0xFFFFFF, folded[0] & 0xFFFFFF) == (pid, tid)
    assert folded[0] >> 48 == hw * count + index
    job = place("kernels", "deviceId", np.array([device, -1]), at, "r")
    assert [v.tolist() for v in JobIds(np.array([0, offset, offset + 16])).devices(job)] == [[1, -1], [device, -1]]
    assert place("kernels", "start", np.array([5, -1]), Placement(shift=10), "r").tolist() == [15, -1]


def test_one_report_is_placed_as_is():
    values = np.array([3, (1 << 48) | (31000 << 24) | 7, -1])
    for column in ("pid", "globalTid", "deviceId", "callchainId", "start"):
        assert place("runtime", column, values, Placement(), "r").tolist() == values.tolist()


RANDOM_KERNEL = st.tuples(st.integers(0, 1), st.integers(0, 1), st.integers(0, 400), st.integers(0, 120),
                          st.booleans())


@given(reports=st.lists(st.tuples(st.lists(RANDOM_KERNEL, min_size=1, max_size=8), st.integers(0, 300),
                                  st.integers(0, 300)), min_size=2, max_size=3))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_random_reports_merge_like_one(reports, tmp_path_factory):
    """Random reports (the same pids and devices everywhere, random clocks): the PCCL and
    kernel summaries of the merged set equal those of the concatenated report."""
    folder = tmp_path_factory.mktemp("random")
    paths = []
    for k, (kernels, start, skew) in enumerate(reports):
        w = ReportWriter(folder / f"r_node_{k}.sqlite")
        pid, dev, s, d, pccl = (list(c) for c in zip(*kernels))
        names = [ALLREDUCE if p else "gemm" for p in pccl]
        w.add("kernels", start=[start + x for x in s], end=[start + x + y for x, y in zip(s, d)], deviceId=dev,
              correlationId=list(range(1, len(s) + 1)), globalPid=[(1 + p) << 24 for p in pid],
              demangledName=w.strings(names), shortName=w.strings(names))
        w.add("devices", id=[0, 1])
        w.add("analysis", startTime=start, stopTime=start + 1000, duration=1000)
        w.add("session_start", utcEpochNs=U + skew)
        w.close()
        paths.append(w.path)
    merged = open_merged([str(p) for p in paths], InlineExecutor(), cache=False, normalize=True)
    concat = SqliteReport(concatenate(paths, folder / "all.sqlite", utc_shifts(paths)), cache=False)
    for name in ("pccl_desync_trace", "pccl_desync_summary", "hggc_ppu_kern_sum"):
        rule = REGISTRY.get(name)
        options = rule.parse_options({})
        expected = expected_from(run_rule(rule, options, Inputs(concat)), merged)
        assert render(run_merged(rule, options, Inputs(merged)), "csv") == render(expected, "csv")
    merged.close()


# -- the corpus ------------------------------------------------------------------------------
@pytest.mark.parametrize("path", corpus_params())
def test_corpus_normalized_single_report(path):
    before = fingerprint(path)
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum,pccl_desync_summary", "--ts-normalize", "true", path)
    assert run.code in (0, 2) and "Traceback" not in run.err
    if run.code == 2:
        assert "does not contain" in run.err or "--ts-normalize needs" in run.err
    assert fingerprint(path) == before


def test_corpus_merged(cluster):
    files = [p.values[0] for p in corpus_params() if p.values[0] is not None]
    if not files:
        pytest.skip("../shared/corpus/nsys is absent")
    before = [fingerprint(p) for p in files]
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum,hggc_api_sum,pccl_desync_summary", "--merge-reports",
                  "--skip-bad-reports", "--format", "csv", "--scheduler", cluster.scheduler_address, *files)
    assert run.code == 0 and "Traceback" not in run.err and "internal error" not in run.err, run.err
    assert run.out.count("Row#") == 3
    assert [fingerprint(p) for p in files] == before
