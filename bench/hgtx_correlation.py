"""Time HGTX range-to-activity correlation on synthetic arrays (no report file).

    python bench/hgtx_correlation.py [--ranges 1000000] [--kernels 5000000] [--threads 16]

Each thread runs a loop of iterations: an outer push/pop range holding nested ranges
(depth 4), kernels launched at random times by runtime calls on the same threads, and a
tenth of the kernels run from graphs whose nodes were created inside ranges.
Prints the time of each stage and the number of pairs.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import asysstats.analysis.launches as launches_module
from asysstats.analysis.correlate import Pairs, correlate, project
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.launches import innermost_range_names
from asysstats.analysis.nesting import nesting
from asysstats.core.strings import StringPool
from asysstats.core.tables import EventTable

DEPTH = 4


def make_ranges(n: int, threads: int, rng: np.random.Generator) -> EventTable:
    """``n`` properly nested ranges: per thread, blocks of DEPTH nested ranges back to back."""
    blocks = n // DEPTH
    thread = rng.integers(0, threads, blocks)
    order = np.argsort(thread, kind="stable")
    thread = thread[order]
    slot = np.arange(blocks) - np.searchsorted(thread, thread)
    base = slot * 10_000
    lvl = np.arange(DEPTH)
    start = (base[:, None] + lvl * 100).ravel()
    end = (base[:, None] + 10_000 - lvl * 100 - 1).ravel()
    g = np.repeat(thread, DEPTH) + (1 << 24)
    rid = np.arange(len(start)) + 1
    nest = nesting(g, start, end, np.ones(len(start), bool), rid)
    return EventTable({"rangeId": rid, "name": rid % 100, "globalTid": g, "start": start, "end": end, **nest})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranges", type=int, default=1_000_000)
    ap.add_argument("--kernels", type=int, default=5_000_000)
    ap.add_argument("--threads", type=int, default=16)
    args = ap.parse_args()
    rng = np.random.default_rng(0)

    clock = time.process_time  # CPU seconds: robust to a busy machine (numpy runs single-threaded here)
    t0 = clock()
    ranges = make_ranges(args.ranges, args.threads, rng)
    t_nest = clock() - t0
    span = int(ranges["end"].max())
    k = args.kernels
    # tables as a profiler writes them: calls in time order, correlation ids rising with
    # time, kernels in start order (each a little after its call, with some jitter)
    call_start = np.sort(rng.integers(0, span, k))
    calls = EventTable({
        "start": call_start, "end": call_start + 50,
        "globalTid": rng.integers(0, args.threads, k) + (1 << 24),
        "correlationId": np.arange(k), "pid": np.ones(k, np.int64), "tid": np.zeros(k, np.int64)})
    graph = np.where(rng.random(k) < 0.1, np.arange(k), -1)
    kernel_start = call_start + rng.integers(1_000, 5_000, k)
    by_start = np.argsort(kernel_start, kind="stable")
    kernels = EventTable({
        "start": kernel_start[by_start], "end": kernel_start[by_start] + rng.integers(100, 3_000, k),
        "deviceId": np.zeros(k, np.int64), "correlationId": by_start, "pid": np.ones(k, np.int64),
        "graphNodeId": graph[by_start]})
    nodes = EventTable({
        "start": np.sort(rng.integers(0, span, k)), "globalTid": rng.integers(0, args.threads, k) + (1 << 24),
        "graphNodeId": np.arange(k), "originalGraphNodeId": np.full(k, -1), "pid": np.ones(k, np.int64)})
    inputs = Inputs(_FakeReport(calls, nodes, ranges))
    launches_module.all_ranges = lambda given: given.report.ranges  # no report file: ranges come from arrays

    t0 = clock()
    pairs: Pairs = correlate(inputs, ranges, kernels, graph_mapping=False)
    t_direct = clock() - t0
    t0 = clock()
    pairs_graph = correlate(inputs, ranges, kernels, graph_mapping=True)
    t_graph = clock() - t0
    t0 = clock()
    project(pairs_graph, kernels, ranges.rows)
    t_proj = clock() - t0
    t0 = clock()
    innermost_range_names(inputs, kernels)
    t_inner = clock() - t0
    print(f"{ranges.rows} ranges x {k} kernels, {args.threads} threads (CPU seconds)")
    print(f"nesting sweep          {t_nest:7.2f} s")
    print(f"correlate (no graph)   {t_direct:7.2f} s  {len(pairs.range_row)} pairs")
    print(f"correlate (graph map)  {t_graph:7.2f} s  {len(pairs_graph.range_row)} pairs")
    print(f"projection            {t_proj:7.2f} s")
    print(f"innermost range names  {t_inner:7.2f} s")


class _FakeReport:
    """Just enough of a report (:class:`~asysstats.reading.protocol.ReportSource`) for the correlation functions."""

    def __init__(self, calls: EventTable, nodes: EventTable, ranges: EventTable) -> None:
        self.strings = StringPool()
        self.tables = {"runtime": calls, "graph_nodes": nodes}
        self.ranges = ranges

    def has(self, name: str) -> bool:
        return name in self.tables

    def load(self, name: str, columns=()) -> EventTable:
        return self.tables[name]


if __name__ == "__main__":
    main()
